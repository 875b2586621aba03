//go:build tools

// Package tools pins etcd's dependencies so that `go mod tidy` keeps them.
package tools

import _ "go.etcd.io/etcd/server/v3/etcdmain"
