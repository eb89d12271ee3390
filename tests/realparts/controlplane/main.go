// Command controlplane is one binary for the real Kubernetes parts the cluster tests run: etcd, kube-apiserver,
// kube-controller-manager and kubectl, dispatched on the name it is called by (symlinks) or on its first argument.
// One binary because the four share almost every package: linking them once costs a fraction of four builds.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	if name == "controlplane" {
		if len(os.Args) < 2 {
			fmt.Fprintln(os.Stderr, "usage: controlplane etcd|kube-apiserver|kube-controller-manager|kubectl [args...]")
			os.Exit(2)
		}
		name, os.Args = os.Args[1], os.Args[1:]
	}
	switch name {
	case "etcd":
		etcdmain.Main(os.Args)
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kubectl":
		// As cmd/kubectl does: RunNoErrOutput returns the error for kubectl to print in its own format and exit 1.
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
	default:
		fmt.Fprintf(os.Stderr, "controlplane: unknown part %q\n", name)
		os.Exit(2)
	}
}
