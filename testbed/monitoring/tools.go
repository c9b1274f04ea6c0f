//go:build tools

// Package monitoring pins the Prometheus Operator API whose ServiceMonitor and PrometheusRule CRDs
// the chart's tests install in the test bed's API server before the server-side dry-run of the
// production values. scripts/testbed generates them from these types with controller-gen (the
// version of make generate); nothing imports it.
package monitoring

import _ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
