// The Pulumi Kubernetes provider, as upstream's cmd/pulumi-resource-kubernetes/main.go builds it, from the published
// provider/v4 Go module. Upstream's main embeds schema-embed.json and terraform-mapping-embed.json, which its Makefile
// generates and git does not hold; ./prepare generates both here from the schema.json and terraform-mapping.json the
// module ships, and the version string (which upstream sets with -ldflags at release time).
package main

import (
	_ "embed"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

//go:embed version.txt
var providerVersion string

func main() {
	version.Version = strings.TrimSpace(providerVersion)
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
