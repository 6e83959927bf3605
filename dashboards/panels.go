package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Label matchers every panel shares; the variables are defined in
// variables().
const (
	byTarget  = `target=~"$target"`
	byCommand = `target=~"$target", command=~"$command"`
	probe     = `target=~"$target", command=~"$command", phase="probe"`
)

// Colours of the house palette (Grafana named colours).
const (
	green  = "green"
	orange = "orange"
	red    = "red"
	blue   = "blue"
)

func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

// variables are the dashboard's template variables: datasource, target and
// command, the last two multi-valued with "All".
func variables(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("target").
			Label("Target").
			Description("Redis targets as the prober names them (the target label).").
			Datasource(datasource()).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(redis_prober_up, target)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true)).
		WithVariable(dashboard.NewQueryVariableBuilder("command").
			Label("Command").
			Description("Probed commands (the command label).").
			Datasource(datasource()).
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(redis_prober_requests_total{target=~"$target"}, command)`)}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true))
}

// changeAnnotations marks every detected change at the moment it
// happened (the series value is the change's Unix time): a target's
// (restart, version, config, role, maxmemory, failover) and the prober
// host's (kernel, THP, sysctl), which every target's latency may follow.
func changeAnnotations(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.Annotation(dashboard.NewAnnotationQueryBuilder().
		Name("Changes").
		Datasource(datasource()).
		Enable(true).
		IconColor(orange).
		Expr(`max by (target, kind) (redis_prober_change_last_timestamp_seconds{target=~"$target"}) * 1000`).
		UseValueForTime(true).
		TitleFormat("{{kind}} changed").
		TextFormat("{{target}}: {{kind}} changed").
		TagKeys("target,kind")).
		Annotation(dashboard.NewAnnotationQueryBuilder().
			Name("Host changes").
			Datasource(datasource()).
			Enable(true).
			IconColor(orange).
			Expr(`max by (instance, kind) (redis_prober_host_change_last_timestamp_seconds) * 1000`).
			UseValueForTime(true).
			TitleFormat("host {{kind}} changed").
			TextFormat("{{instance}}: the prober's host {{kind}} changed").
			TagKeys("instance,kind"))
}

// quantile is the q-quantile of a latency histogram per the by labels: the
// native histogram, or the classic _bucket series when there is none.
func quantile(q, metric, matchers, by string) string {
	return quantileOr(q, metric, matchers, matchers, by)
}

// quantileOr is quantile whose classic fallback reads only the series of
// classic: the burst phase of redis_prober_latency_seconds has native
// buckets only, so a Prometheus without native histograms has a p99 of
// the probe phase alone (its _bucket series of the burst phase would be a
// lone +Inf bucket, a NaN quantile).
func quantileOr(q, metric, native, classic, by string) string {
	return fmt.Sprintf("histogram_quantile(%s, sum by (%s) (rate(%s{%s}[$__rate_interval])))\n"+
		"or\nhistogram_quantile(%s, sum by (%s, le) (rate(%s_bucket{%s}[$__rate_interval])))",
		q, by, metric, native, q, by, metric, classic)
}

// distribution is what a heatmap of a histogram reads: the native
// histogram's buckets, or the classic ones when no native series exists
// (`unless on ()` keeps the classic buckets out when both are stored).
func distribution(fn, metric, matchers string) string {
	native := fmt.Sprintf("sum(%s(%s{%s}[$__rate_interval]))", fn, metric, matchers)
	return fmt.Sprintf("%s\nor\n(sum by (le) (%s(%s_bucket{%s}[$__rate_interval])) unless on () %s)",
		native, fn, metric, matchers, native)
}

// objective is the per-target latency objective, drawn as a dashed line.
const objective = `max by (target) (redis_prober_objective_seconds{target=~"$target"})`

func query(ref, expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		RefId(ref).
		Expr(expr).
		LegendFormat(legend).
		Range()
}

// tableQuery asks for the current value of every series, one table row each.
func tableQuery(ref, expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		RefId(ref).
		Expr(expr).
		LegendFormat("__auto").
		Format(prometheus.PromQueryFormatTable).
		Instant()
}

type step struct {
	value float64
	color string
}

// thresholds starts at base colour and changes colour at each step.
func thresholds(base string, steps ...step) *dashboard.ThresholdsConfigBuilder {
	ts := []dashboard.Threshold{{Color: base}}
	for _, s := range steps {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(s.value), Color: s.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

func legend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).
		Calcs([]string{"mean", "max", "lastNotNull"})
}

func tooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().
		Mode(common.TooltipDisplayModeMulti).
		Sort(common.SortOrderDescending)
}

// graph is a time-series panel with the house defaults: table legend with
// mean/max/last, a sorted shared tooltip, thresholds drawn as dashed lines.
func graph(id uint32, title, description, unit string, h, w uint32, th *dashboard.ThresholdsConfigBuilder) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(datasource()).
		Height(h).
		Span(w).
		Unit(unit).
		Min(0).
		Thresholds(th).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		LineWidth(1).
		FillOpacity(8).
		ShowPoints(common.VisibilityModeNever).
		SpanNulls(common.BoolOrFloat64{Bool: cog.ToPtr(false)}).
		Legend(legend()).
		Tooltip(tooltip())
}

// dashedRed draws the series whose name matches re as a dashed red line, for
// objectives and limits plotted beside measurements.
func dashedRed(p *timeseries.PanelBuilder, re string) *timeseries.PanelBuilder {
	return p.OverrideByRegexp(re, []dashboard.DynamicConfigValue{
		{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": red}},
		{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
		{Id: "custom.fillOpacity", Value: 0},
	})
}

func bigValue(id uint32, title, description, unit string, h, w uint32, th *dashboard.ThresholdsConfigBuilder) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(datasource()).
		Height(h).
		Span(w).
		Unit(unit).
		Thresholds(th).
		ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeArea).
		TextMode(common.BigValueTextModeValueAndName).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
}

func heat(id uint32, title, description string, h, w uint32) *heatmap.PanelBuilder {
	return heatmap.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(datasource()).
		Height(h).
		Span(w).
		Calculate(false).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit("s").Decimals(1)).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		CellGap(1).
		ShowLegend().
		Tooltip(heatmap.NewHeatmapTooltipBuilder().Mode(common.TooltipDisplayModeSingle).YHistogram(true))
}

// passFail maps 1/0 gauges to words and colours.
func passFail(one, zero string) []dashboard.ValueMapping {
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
		Type: dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{
			"1": {Text: cog.ToPtr(one), Color: cog.ToPtr(green), Index: cog.ToPtr[int32](0)},
			"0": {Text: cog.ToPtr(zero), Color: cog.ToPtr(red), Index: cog.ToPtr[int32](1)},
		},
	}}}
}

func grid(id uint32, title, description string, h, w uint32) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(datasource()).
		Height(h).
		Span(w).
		ShowHeader(true).
		CellHeight(common.TableCellHeightSm).
		Filterable(true)
}

// checksTable is a table of tuning checks, pass or fail by severity, the
// failing ones first: the host's and each Redis's.
func checksTable(id uint32, title, description string, h, w uint32, expr string) *table.PanelBuilder {
	return grid(id, title, description, h, w).
		Mappings(passFail("pass", "fail")).
		CellOptions(common.TableCellOptions{TableColorTextCellOptions: &common.TableColorTextCellOptions{Type: common.TableCellDisplayModeColorText}}).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName("result"),
		}).
		WithTarget(tableQuery("A", expr)).
		WithTransformation(hideColumns(map[string]string{"Value": "result"}))
}

// hideColumns drops the scrape bookkeeping columns of an instant table.
func hideColumns(rename map[string]string, hide ...string) dashboard.DataTransformerConfig {
	excluded := map[string]bool{"Time": true, "__name__": true, "job": true}
	for _, h := range hide {
		excluded[h] = true
	}
	return dashboard.DataTransformerConfig{
		Id:      "organize",
		Options: map[string]any{"excludeByName": excluded, "renameByName": rename},
	}
}
