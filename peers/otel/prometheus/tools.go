//go:build tools

// Pins Prometheus 3.x for the pipeline tests (build.sh builds its cmd/prometheus).
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
