//go:build tools

// Package kubeapiserver pins the Kubernetes release whose kube-apiserver the operator's tests run
// against (and whose kubectl is built when the machine has none). scripts/testbed builds them from
// this module; nothing imports it.
package kubeapiserver

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
