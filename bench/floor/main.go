// Command floor is what the one-target footprint goal is measured against:
// a program that links the four libraries the prober must use and uses
// them as the prober does at one target, and does nothing else. It parses
// kingpin flags, PINGs one Redis ten times a second through go-redis into a
// native histogram, reads its own /proc stat through procfs once a second,
// and serves a registry with the Go and process collectors through
// exporter-toolkit's web server, logging through promslog.
//
// make bench runs it in the same resource window as the prober: what the
// prober takes over it is what the prober's own features cost (see
// docs/lab/2026-12-performance-notes.md, "The one-target RSS against the
// mandated libraries' own"). It is a measuring stick, not a prober: no timeouts tuned, no
// errors counted.
package main

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"
	"github.com/prometheus/procfs"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := kingpin.Flag("redis.addr", "Redis to PING.").Default("127.0.0.1:6379").String()
	webFlags := kingpinflag.AddFlags(kingpin.CommandLine, ":9380")
	logCfg := &promslog.Config{}
	promslogflag.AddFlags(kingpin.CommandLine, logCfg)
	kingpin.Parse()
	logger := promslog.New(logCfg)

	reg := prometheus.NewRegistry()
	latency := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "floor_ping_seconds", Help: "PING latency.", NativeHistogramBucketFactor: 1.1,
	})
	reg.MustRegister(latency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	client := redis.NewClient(&redis.Options{Addr: *addr})
	defer client.Close()
	go ping(client, latency)

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if err := web.ListenAndServe(&http.Server{Handler: mux}, webFlags, logger); err != nil {
		logger.Error("serving", "err", err)
		os.Exit(1)
	}
}

// ping is the probe loop: ten PINGs a second, and the process's own stat
// once a second, as the prober's collectors read /proc.
func ping(c *redis.Client, h prometheus.Histogram) {
	fs, err := procfs.NewDefaultFS()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		<-tick.C
		start := time.Now()
		if c.Ping(context.Background()).Err() == nil {
			h.Observe(time.Since(start).Seconds())
		}
		if err == nil && i%10 == 0 {
			if p, err := fs.Self(); err == nil {
				_, _ = p.Stat()
			}
		}
	}
}
