package main

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// collectorExtension parses args into a fresh app carrying only the
// collector flags and builds the extension on a private registry.
func collectorExtension(t *testing.T, args ...string) (*prometheus.Registry, []engine.Service, error) {
	t.Helper()
	app := kingpin.New("test", "")
	app.Terminate(nil)
	ext := addCollectorRunFlags(app, addPathFlags(app))
	if _, err := app.Parse(args); err != nil {
		return nil, nil, err
	}
	reg := prometheus.NewPedanticRegistry()
	svcs, err := ext(extensionEnv{log: slog.New(slog.DiscardHandler), reg: reg, metrics: prober.NewMetrics(reg), status: &engine.StatusSources{}})
	return reg, svcs, err
}

func TestCollectorFlagsComeFromTheList(t *testing.T) {
	app := kingpin.New("test", "")
	addCollectorRunFlags(app, addPathFlags(app))
	for _, d := range collector.All() {
		if app.GetFlag("collector."+d.Name) == nil {
			t.Errorf("no --collector.%s flag", d.Name)
		}
	}
	for _, f := range []string{"path.procfs", "path.sysfs", "collector.refresh-interval"} {
		if app.GetFlag(f) == nil {
			t.Errorf("no --%s flag", f)
		}
	}
	reg, svcs, err := collectorExtension(t, "--no-collector.thp", "--path.procfs=../../collector/testdata/hosts/untuned/proc",
		"--path.sysfs=../../collector/testdata/hosts/untuned/sys")
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 1 {
		t.Fatalf("%d services, want 1", len(svcs))
	}
	if n, err := testutil.GatherAndCount(reg, "redis_prober_host_thp_enabled"); err != nil || n != 0 {
		t.Errorf("thp series with --no-collector.thp: %d %v", n, err)
	}
	if n, _ := testutil.GatherAndCount(reg, "redis_prober_host_sysctl"); n != 6 {
		t.Errorf("%d sysctl series from the fixture, want 6", n)
	}
	// With every Redis-side collector off there is no service at all.
	var off []string
	for _, d := range collector.All() {
		if d.Kind == collector.KindTarget {
			off = append(off, "--no-collector."+d.Name)
		}
	}
	_, svcs, err = collectorExtension(t, off...)
	if err != nil || len(svcs) != 0 {
		t.Errorf("services %v, err %v; want none", svcs, err)
	}
}

func TestCollectorRefreshIntervalTooShort(t *testing.T) {
	_, _, err := collectorExtension(t, "--collector.refresh-interval=10ms")
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--collector.refresh-interval") {
		t.Errorf("err %v, want a usage error naming the flag", err)
	}
}

func TestCollectorServiceLifecycle(t *testing.T) {
	srv := redistest.Start(t)
	reg, svcs, err := collectorExtension(t, "--collector.refresh-interval=1h")
	if err != nil {
		t.Fatal(err)
	}
	name, ep, err := engine.ParseAddr(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cmds, _ := prober.ParseCommands("ping")
	control := ep.NewClient(time.Second, 1)
	defer control.Close()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		engine.RunService(ctx, svcs[0], engine.Node{Target: engine.Target{Name: name, Endpoint: ep, Probe: prober.ProbeConfig{Commands: cmds}}, Control: control})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, _ := testutil.GatherAndCount(reg, "redis_prober_memory_used_bytes"); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatal("target collectors not registered within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Scrapes read the cache: 20 scrapes add no INFO call. (Reading the
	// count is itself one INFO call.)
	infoCalls := func() int {
		s, err := srv.Client().Info(t.Context(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		info, err := redisinfo.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(info["cmdstat_info"], "calls="), ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			t.Fatalf("cmdstat_info %q", info["cmdstat_info"])
		}
		return n
	}
	before := infoCalls()
	for range 20 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if grew := infoCalls() - before; grew != 1 {
		t.Errorf("INFO calls grew by %d over 20 scrapes and our one INFO, want 1", grew)
	}
	cancel()
	wg.Wait()
	if n, _ := testutil.GatherAndCount(reg, "redis_prober_memory_used_bytes", "redis_prober_check_passed", "redis_prober_fork_seconds"); n != 0 {
		t.Errorf("%d series of the stopped target left behind", n)
	}
}

// --collector.per-target-duration: a target's collector durations only
// with it; its successes and the host collectors' durations either way.
func TestCollectorPerTargetDurationFlag(t *testing.T) {
	srv := redistest.Start(t)
	name, ep, err := engine.ParseAddr(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cmds, _ := prober.ParseCommands("ping")
	for _, on := range []bool{false, true} {
		args := []string{"--collector.refresh-interval=1h"}
		if on {
			args = append(args, "--collector.per-target-duration")
		}
		reg, svcs, err := collectorExtension(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		control := ep.NewClient(time.Second, 1)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			engine.RunService(ctx, svcs[0], engine.Node{Target: engine.Target{Name: name, Endpoint: ep, Probe: prober.ProbeConfig{Commands: cmds}}, Control: control})
		}()
		count := func(family string) (hosts, targets int) {
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() != family {
					continue
				}
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "target" && l.GetValue() == name {
							targets++
						} else if l.GetName() == "target" {
							hosts++
						}
					}
				}
			}
			return hosts, targets
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, n := count("redis_prober_collector_success"); n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no collector_success of the target within 10s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		hosts, targets := count("redis_prober_collector_success")
		hostDurations, targetDurations := count("redis_prober_collector_duration_seconds")
		if hostDurations != hosts || hosts == 0 || (on && targetDurations != targets) || (!on && targetDurations != 0) {
			t.Errorf("flag %v: durations of %d host and %d target collectors, successes %d and %d", on, hostDurations, targetDurations, hosts, targets)
		}
		cancel()
		<-done
		_ = control.Close()
	}
}
