// Package e2e holds the end-to-end proof of the dashboards and rules: a real
// redis-server, the real prober binary and a real Prometheus (native
// histograms on, the project's recording and alerting rules loaded), then
// every dashboard query and every rule evaluated through the HTTP API. The
// package has no code of its own beyond its tests.
package e2e
