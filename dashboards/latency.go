package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// base is what every redis-prober dashboard shares: tags, time, links to
// the other dashboards, the variables and the change annotations.
func base(uid, title, description string) *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"redis", "redis-prober"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Link(dashboard.NewDashboardLinkBuilder("redis-prober dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"redis-prober"}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true))
	return changeAnnotations(variables(b))
}

// Latency is "Redis latency": what clients of each target feel, against the
// objective, with bursts, connections and host jitter beside it.
func Latency() (dashboard.Dashboard, error) {
	const bySeries = "target, node, command"
	b := base("redis-prober-latency", "Redis latency",
		"Client-side Redis latency measured by redis-prober: probes, bursts, connections, host jitter and changes.")

	b = b.WithRow(dashboard.NewRowBuilder("Overview").Id(1)).
		WithPanel(bigValue(2, "Up",
			"1 when the last probe round got an answer from Redis. 0 means timeouts or no connection: see the RedisProberTargetDown runbook.",
			"none", 4, 4, thresholds(red, step{1, green})).
			Mappings(passFail("up", "down")).
			GraphMode(common.BigValueGraphModeNone).
			WithTarget(query("A", `min by (target) (redis_prober_up{target=~"$target"})`, "{{target}}"))).
		WithPanel(bigValue(3, "Probe errors",
			"Share of probes that got an error or timed out. The RedisProberProbeErrors alert pages above 1% over 5 minutes.",
			"percentunit", 4, 5, thresholds(green, step{0.001, orange}, step{0.01, red})).
			WithTarget(query("A",
				`sum by (target) (rate(redis_prober_requests_total{target=~"$target", phase="probe", result!="ok"}[$__rate_interval]))`+"\n/\n"+
					`sum by (target) (rate(redis_prober_requests_total{target=~"$target", phase="probe"}[$__rate_interval]))`,
				"{{target}}"))).
		WithPanel(bigValue(4, "Availability (5m)",
			"Share of scrapes over the last 5 minutes at which Redis answered the last probe (recording rule target:redis_prober_up:avg_over_time5m).",
			"percentunit", 4, 5, thresholds(red, step{0.99, orange}, step{0.999, green})).
			Decimals(2).
			WithTarget(query("A", `min by (target) (target:redis_prober_up:avg_over_time5m{target=~"$target"})`, "{{target}}"))).
		WithPanel(bigValue(5, "Probe p99",
			"p99 of every probe of the selected commands. Red from 5 ms, the default objective; the Objective panel shows each target's own.",
			"s", 4, 5, thresholds(green, step{0.0025, orange}, step{0.005, red})).
			WithTarget(query("A", quantile("0.99", "redis_prober_latency_seconds", probe, "target"), "{{target}}"))).
		WithPanel(bigValue(6, "Objective",
			"The p99 latency objective of each target (--probe.objective, redis_prober_objective_seconds) that the alerts compare with.",
			"s", 4, 5, thresholds(blue)).
			ColorMode(common.BigValueColorModeNone).
			GraphMode(common.BigValueGraphModeNone).
			WithTarget(query("A", objective, "{{target}}")))

	b = b.WithRow(dashboard.NewRowBuilder("Probe latency").Id(7)).
		WithPanel(dashedRed(graph(8, "Probe latency: p50, p99, p99.9 by command",
			"Client-side latency of probe requests from their intended start (no coordinated omission), per target, node and command; the dashed red line is the target's objective.",
			"s", 10, 24, thresholds(green)).
			WithTarget(query("A", quantile("0.5", "redis_prober_latency_seconds", probe, bySeries), "p50 {{target}} {{node}} {{command}}")).
			WithTarget(query("B", quantile("0.99", "redis_prober_latency_seconds", probe, bySeries), "p99 {{target}} {{node}} {{command}}")).
			WithTarget(query("C", quantile("0.999", "redis_prober_latency_seconds", probe, bySeries), "p99.9 {{target}} {{node}} {{command}}")).
			WithTarget(query("D", objective, "objective {{target}}")), "^objective .*")).
		WithPanel(heat(9, "Probe latency distribution",
			"Heatmap of the native histogram of probe latency (classic buckets when the server stores no native histograms); Grafana 11.1 or later.",
			9, 12).
			WithTarget(query("A", distribution("rate", "redis_prober_latency_seconds", probe), "{{le}}").
				Format(prometheus.PromQueryFormatHeatmap))).
		WithPanel(graph(10, "Latency budget burn",
			"The objective is 'p99 <= objective', a budget of 1% slow probes. Each line is a burn rate: above 1 means the alert's pace is reached (14.4x over 1h and 6x over 6h page, 1x over 3d opens a ticket). The 'share' lines are what the alerts read: the share of probes slower than the objective (alerts/burnrate.yml, one rule group per objective). The 'quantile' lines are the fallback's (alerts/fallback/burnrate-quantile.yml), for an objective without a group.",
			"none", 9, 12, thresholds(green, step{1, red})).
			Decimals(2).
			WithTarget(query("A", `target_command:redis_prober_latency_seconds:slow_ratio_rate1h{target=~"$target", command=~"$command"} / 0.144`,
				"share 14.4x over 1h {{target}} {{node}} {{command}}")).
			WithTarget(query("B", `target_command:redis_prober_latency_seconds:slow_ratio_rate6h{target=~"$target", command=~"$command"} / 0.06`,
				"share 6x over 6h {{target}} {{node}} {{command}}")).
			WithTarget(query("C", `target_command:redis_prober_latency_seconds:slow_ratio_rate3d{target=~"$target", command=~"$command"} / 0.01`,
				"share 1x over 3d {{target}} {{node}} {{command}}")).
			WithTarget(query("D", `target_command:redis_prober_latency_seconds:p856_rate1h{target=~"$target", command=~"$command"}`+
				"\n/ on (job, instance, target) group_left ()\nmax by (job, instance, target) (redis_prober_objective_seconds)",
				"quantile 14.4x over 1h {{target}} {{node}} {{command}}")).
			WithTarget(query("E", `target_command:redis_prober_latency_seconds:p94_rate6h{target=~"$target", command=~"$command"}`+
				"\n/ on (job, instance, target) group_left ()\nmax by (job, instance, target) (redis_prober_objective_seconds)",
				"quantile 6x over 6h {{target}} {{node}} {{command}}")).
			WithTarget(query("F", `target_command:redis_prober_latency_seconds:p99_rate3d{target=~"$target", command=~"$command"}`+
				"\n/ on (job, instance, target) group_left ()\nmax by (job, instance, target) (redis_prober_objective_seconds)",
				"quantile 1x over 3d {{target}} {{node}} {{command}}"))).
		WithPanel(graph(11, "Probe rate by result",
			"Probe requests per second by result: ok, error (a Redis error reply or a broken connection), timeout (--probe.timeout).",
			"reqps", 8, 12, thresholds(green)).
			WithTarget(query("A", `sum by (target, command, result) (rate(redis_prober_requests_total{`+probe+`}[$__rate_interval]))`,
				"{{target}} {{command}} {{result}}"))).
		WithPanel(graph(12, "Probe error ratio",
			"Share of probes per command that failed; the alert budget is 1% per target.",
			"percentunit", 8, 12, thresholds(green, step{0.01, red})).
			WithTarget(query("A",
				`sum by (target, command) (rate(redis_prober_requests_total{`+probe+`, result!="ok"}[$__rate_interval]))`+"\n/\n"+
					`sum by (target, command) (rate(redis_prober_requests_total{`+probe+`}[$__rate_interval]))`,
				"{{target}} {{command}}")))

	b = b.WithRow(dashboard.NewRowBuilder("Bursts and capacity").Id(13)).
		WithPanel(graph(14, "p99: probe vs burst",
			"p99 of the probe traffic and of burst traffic (phase label). During a burst the probe line shows what ordinary clients felt. The burst phase has native buckets only: a Prometheus that stores no native histograms draws the probe line alone (the last burst's quantiles are in Last burst latency).",
			"s", 8, 12, thresholds(green)).
			WithTarget(query("A", quantileOr("0.99", "redis_prober_latency_seconds", byCommand, probe, "target, phase"), "{{phase}} {{target}}"))).
		WithPanel(graph(15, "Burst throughput",
			"Operations per second reached by the last burst of each plan.",
			"ops", 8, 12, thresholds(green)).
			WithTarget(query("A", `redis_prober_burst_last_ops_per_second{target=~"$target"}`, "{{target}} {{plan}}"))).
		WithPanel(graph(16, "Last burst latency",
			"p50, p99 and p99.9 of the last burst of each plan, measured open-loop from each request's intended send time.",
			"s", 8, 8, thresholds(green)).
			WithTarget(query("A", `redis_prober_burst_last_latency_seconds{target=~"$target"}`, "{{target}} {{plan}} {{quantile}}"))).
		WithPanel(dashedRed(graph(17, "Capacity at the objective",
			"Highest rate at which the last step-load met the latency objective, and (dashed) the best of the last 7 days; the RedisProberCapacityDropped alert fires 30% below it.",
			"ops", 8, 8, thresholds(green)).
			WithTarget(query("A", `redis_prober_capacity_ops_per_second{target=~"$target"}`, "{{target}} {{plan}}")).
			WithTarget(query("B", `target_plan:redis_prober_capacity_ops_per_second:max_over_time7d{target=~"$target"}`, "7d best {{target}} {{plan}}")),
			"^7d best .*")).
		WithPanel(graph(18, "Bursts by outcome",
			"Bursts run per interval: completed, aborted by the safety governor, or skipped (replica, persistence, memory headroom, busy server).",
			"short", 8, 8, thresholds(green)).
			DrawStyle(common.GraphDrawStyleBars).
			FillOpacity(60).
			WithTarget(query("A", `sum by (target, plan, outcome) (increase(redis_prober_burst_runs_total{target=~"$target"}[$__rate_interval]))`,
				"{{target}} {{plan}} {{outcome}}")))

	b = b.WithRow(dashboard.NewRowBuilder("Connections and host jitter").Id(19)).
		WithPanel(graph(20, "Connect latency",
			"Dial, TLS, AUTH and the first PING on a fresh connection (every --probe.connect-interval). Seconds here mean a full accept queue or dropped SYNs (tcp-backlog, somaxconn).",
			"s", 8, 8, thresholds(green, step{0.5, red})).
			WithTarget(query("A", quantile("0.5", "redis_prober_connect_latency_seconds", byTarget, "target, node"), "p50 {{target}} {{node}}")).
			WithTarget(query("B", quantile("0.99", "redis_prober_connect_latency_seconds", byTarget, "target, node"), "p99 {{target}} {{node}}"))).
		WithPanel(graph(21, "Connect probes by result",
			"Connect probes per second by result.",
			"reqps", 8, 8, thresholds(green)).
			WithTarget(query("A", `sum by (target, result) (rate(redis_prober_connects_total{target=~"$target"}[$__rate_interval]))`, "{{target}} {{result}}"))).
		WithPanel(graph(22, "Host delay: is it this host?",
			"This host's own delays, none of them charged to Redis: how long replies sat in the kernel before the prober read them (client delay, every probe), the host's scheduling stalls (what redis-cli --intrinsic-latency shows) and how late the prober's timer woke. High here with a flat latency means the prober's host is slow, not Redis or the network.",
			"s", 8, 8, thresholds(green, step{0.001, orange})).
			WithTarget(query("A", quantile("0.99", "redis_prober_client_delay_seconds", "", "instance"), "client delay p99 {{instance}}")).
			WithTarget(query("B", quantile("0.99", "redis_prober_intrinsic_latency_seconds", "", "instance"), "intrinsic p99 {{instance}}")).
			WithTarget(query("C", quantile("0.99", "redis_prober_schedule_lag_seconds", "", "instance"), "timer lag p99 {{instance}}")))

	b = b.WithRow(dashboard.NewRowBuilder("Changes").Id(23)).
		WithPanel(graph(24, "Changes detected",
			"Changes the prober noticed per interval: a target's restart, version, config, role (failover), maxmemory, and the prober host's kernel, THP and sysctls. They are also drawn as annotations on every panel.",
			"short", 8, 12, thresholds(green)).
			DrawStyle(common.GraphDrawStyleBars).
			FillOpacity(60).
			WithTarget(query("A", `sum by (target, kind) (increase(redis_prober_changes_total{target=~"$target"}[$__rate_interval]))`, "{{target}} {{kind}}")).
			WithTarget(query("B", `sum by (instance, kind) (increase(redis_prober_host_changes_total[$__rate_interval]))`, "host {{instance}} {{kind}}"))).
		WithPanel(graph(25, "p99 before and after the last change",
			"Probe p99 over a window before the last change and since it; the RedisProberLatencyRegressedAfterChange alert fires when 'after' exceeds 1.3x 'before'.",
			"s", 8, 12, thresholds(green)).
			WithTarget(query("A", `redis_prober_change_latency_seconds{`+byCommand+`, quantile="0.99"}`, "{{window}} {{target}} {{command}}")))

	return b.Build()
}
