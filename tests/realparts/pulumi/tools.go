//go:build tools

// Keeps the Pulumi CLI's module in go.mod: `parts` builds github.com/pulumi/pulumi/pkg/v3/cmd/pulumi from it.
package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
