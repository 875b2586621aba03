//go:build tools

// Package tools pins the dependencies of kube-apiserver and kubectl so that `go mod tidy` keeps them.
package tools

import (
	_ "k8s.io/kubectl/pkg/cmd"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
)
