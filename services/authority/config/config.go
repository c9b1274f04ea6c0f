// Package config holds the authority service's Kubernetes manifests that its code depends on: the
// Role its ServiceAccount needs to create and list ExportJobs. The chart renders it, and the
// service's tests apply it to a real API server.
package config

import _ "embed"

// Role is the Role of the service's ServiceAccount (YAML), to bind in the service's namespace.
//
//go:embed role.yaml
var Role []byte
