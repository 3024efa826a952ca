package analysispage

import (
	"fmt"
	"html/template"
	"time"

	"github.com/devprof/devprof/analysis"
)

// analysisIdle is the idle totals the template adds up.
type analysisIdle = analysis.IdleByCause

// dur writes nanoseconds as a duration with about three significant
// digits (1.23ms, 456µs).
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	}
	return d.String()
}

// pct writes part as a share of whole.
func pct(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"dur":    dur,
	"pct":    pct,
	"signed": func(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) },
	"mul100": func(f float64) float64 { return 100 * f },
	"idle":   func(i analysisIdle) int64 { return i.HostWaitNS + i.KernelWaitNS + i.SyncNS + i.OtherNS },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
{{.Fonts.CSS}}
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } th, td { padding: 2px 10px; text-align: right; }
th { background: #f3f3f3; } td { white-space: nowrap; } td.name { white-space: normal; } td.name, th.name { text-align: left; max-width: 34em; overflow-wrap: anywhere; }
tr.slow td { color: #c62828; font-weight: 600; }
.key span { display: inline-block; width: .9em; height: .9em; margin: 0 .3em 0 1em; vertical-align: -1px; }
.warn { color: #b71c1c; } .note { color: #555; } svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Trace.Name}} ({{.Trace.Format}}): {{.R.Events}} events over {{dur .R.WallNS}}.</p>
{{range .Trace.Warnings}}<p class="warn">warning: {{.}}</p>
{{end}}{{range .R.Notes}}<p class="note">note: {{.}}</p>
{{end}}
{{with .Hosts}}
<h2>Across hosts</h2>
<p>{{len .Hosts}} hosts{{if .MedianStepNS}}; the median host's step takes {{dur .MedianStepNS}}{{end}}.
{{if .Stragglers}}Stragglers (median step more than {{printf "%.0f" (mul100 .Threshold)}}% over the median host's): {{range $i, $s := .Stragglers}}{{if $i}}, {{end}}{{$s}}{{end}}.{{else if .MedianStepNS}}No straggler.{{end}}</p>
{{$.HostsSVG}}
<table>
<tr><th class="name">host</th><th>steps</th><th>p50</th><th>p90</th><th>max</th><th>vs median</th><th>slowest step</th><th>late (p50)</th></tr>
{{range .Hosts}}<tr{{if .Straggler}} class="slow"{{end}}><td class="name">{{.Host}}</td><td>{{.Steps}}</td>{{if .Steps}}<td>{{dur .Wall.P50}}</td><td>{{dur .Wall.P90}}</td><td>{{dur .Wall.Max}}</td><td>{{signed .Excess}}</td><td>{{with .Slowest}}{{.Number}} ({{dur .WallNS}}){{end}}</td><td>{{if ge .LateNS 0}}{{dur .LateNS}}{{else}}-{{end}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>{{end}}</tr>
{{end}}</table>
{{with .Skew}}<p>Step starts on the wall clock, over {{.Steps}} steps every host ran: spread p50 {{dur .Spread.P50}}, p90 {{dur .Spread.P90}}, max {{dur .Spread.Max}} (step {{.Worst}}: {{.WorstFirst}} first, {{.WorstLast}} last).</p>{{end}}
<h2>Host {{$.Trace.Name}}</h2>
{{end}}
<h2>Steps</h2>
{{with .R.Steps}}
<p>{{len .All}} steps ({{.Source}}){{if .Warmup}}, the first {{.Warmup}} apart as warm-up{{end}}.</p>
{{$.StepsSVG}}
{{if $.StepsNote}}<p class="note">{{$.StepsNote}}</p>{{end}}
<table>
<tr><th class="name"></th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
<tr><td class="name">wall</td><td>{{dur .Wall.Mean}}</td><td>{{dur .Wall.P50}}</td><td>{{dur .Wall.P90}}</td><td>{{dur .Wall.P99}}</td><td>{{dur .Wall.Max}}</td></tr>
<tr><td class="name">host busy</td><td>{{dur .HostBusy.Mean}}</td><td>{{dur .HostBusy.P50}}</td><td>{{dur .HostBusy.P90}}</td><td>{{dur .HostBusy.P99}}</td><td>{{dur .HostBusy.Max}}</td></tr>
{{if $.R.Devices}}<tr><td class="name">device busy</td><td>{{dur .DeviceBusy.Mean}}</td><td>{{dur .DeviceBusy.P50}}</td><td>{{dur .DeviceBusy.P90}}</td><td>{{dur .DeviceBusy.P99}}</td><td>{{dur .DeviceBusy.Max}}</td></tr>
<tr><td class="name">device idle</td><td>{{dur .DeviceIdle.Mean}}</td><td>{{dur .DeviceIdle.P50}}</td><td>{{dur .DeviceIdle.P90}}</td><td>{{dur .DeviceIdle.P99}}</td><td>{{dur .DeviceIdle.Max}}</td></tr>{{end}}
</table>
{{if .Slowest}}<p>Slowest steps: {{range $i, $s := .Slowest}}{{if $i}}, {{end}}{{$s.Number}} ({{dur $s.WallNS}}){{end}}.</p>{{end}}
{{else}}<p>No steps marked (annotate.Step, TSL's step markers, PyTorch's ProfilerStep#N).</p>
{{end}}
<h2>GPU time</h2>
{{if .R.Devices}}
{{.DevicesSVG}}
<p class="key"><span style="background:#2e7d32"></span>compute<span style="background:#6a1b9a"></span>communication<span style="background:#1565c0"></span>memory<span style="background:#bdbdbd"></span>idle</p>
<table>
<tr><th class="name"></th><th>wall</th><th>compute</th><th>communication</th><th>memory</th><th>idle</th><th>comm hidden</th></tr>
{{range .R.Devices}}<tr><td class="name">device {{.Ordinal}}{{with .Name}} ({{.}}){{end}}</td><td>{{dur .WallNS}}</td><td>{{dur .ComputeNS}} ({{pct .ComputeNS .WallNS}})</td><td>{{dur .CommunicationNS}} ({{pct .CommunicationNS .WallNS}})</td><td>{{dur .MemoryNS}} ({{pct .MemoryNS .WallNS}})</td><td>{{dur .IdleNS}} ({{pct .IdleNS .WallNS}})</td><td>{{dur .OverlapNS}}</td></tr>
{{if gt (len .Streams) 1}}{{range .Streams}}<tr><td class="name">&nbsp;&nbsp;{{.Name}}</td><td>{{dur .WallNS}}</td><td>{{dur .ComputeNS}} ({{pct .ComputeNS .WallNS}})</td><td>{{dur .CommunicationNS}} ({{pct .CommunicationNS .WallNS}})</td><td>{{dur .MemoryNS}} ({{pct .MemoryNS .WallNS}})</td><td>{{dur .IdleNS}} ({{pct .IdleNS .WallNS}})</td><td>{{dur .OverlapNS}}</td></tr>
{{end}}{{end}}{{end}}</table>
<h2>Idle time by cause</h2>
{{with .R.Idle}}{{$all := idle .IdleByCause}}
<p>{{dur $all}} idle in {{.Gaps}} gaps: host wait {{dur .HostWaitNS}} ({{pct .HostWaitNS $all}}), kernel wait {{dur .KernelWaitNS}} ({{pct .KernelWaitNS $all}}), sync {{dur .SyncNS}} ({{pct .SyncNS $all}}), other {{dur .OtherNS}} ({{pct .OtherNS $all}}).</p>
{{if .Largest}}{{$.GapsSVG}}
<p class="key"><span style="background:#ef6c00"></span>host wait<span style="background:#f9a825"></span>kernel wait<span style="background:#6a1b9a"></span>sync<span style="background:#bdbdbd"></span>other</p>{{end}}
{{if .Largest}}<table>
<tr><th>gap</th><th class="name">cause</th><th>at</th><th>step</th><th class="name">stream</th><th class="name">ended by</th><th class="name">launched by</th><th class="name">host in</th></tr>
{{range .Largest}}<tr><td>{{dur .DurNS}}</td><td class="name">{{.Cause}}</td><td>+{{dur .StartNS}}</td><td>{{if ge .Step 0}}{{.Step}}{{else}}-{{end}}</td><td class="name">{{.Device}}: {{.Stream}}</td><td class="name">{{.Next}}</td><td class="name">{{.Launch}}</td><td class="name">{{.HostSpan}}</td></tr>
{{end}}</table>{{end}}
{{end}}
{{else}}<p>No device work in the trace.</p>
{{end}}
{{with .R.Kernels}}{{if .Count}}
<h2>Kernels</h2>
<p>{{.Count}} kernels, {{dur .TotalNS}} in all. {{.Launch.Tiny}} under {{dur .Launch.TinyNS}} ({{pct .Launch.TinyTotalNS .TotalNS}} of kernel time){{if .Launch.Linked}}; launch call to kernel start over {{.Launch.Linked}} linked: p50 {{dur .Launch.Latency.P50}}, p90 {{dur .Launch.Latency.P90}}, p99 {{dur .Launch.Latency.P99}}, max {{dur .Launch.Latency.Max}}{{end}}.</p>
<table>
<tr><th class="name">kernel</th><th class="name">kind</th><th>count</th><th>total</th><th>share</th><th>mean</th><th>p50</th><th>p99</th><th>occupancy</th></tr>
{{$total := .TotalNS}}{{range .Top}}<tr><td class="name">{{.Name}}</td><td class="name">{{.Category}}</td><td>{{.Count}}</td><td>{{dur .TotalNS}}</td><td>{{pct .TotalNS $total}}</td><td>{{dur .MeanNS}}</td><td>{{dur .P50NS}}</td><td>{{dur .P99NS}}</td><td>{{if ge .Occupancy 0.0}}{{printf "%.1f%%" .Occupancy}}{{else}}-{{end}}</td></tr>
{{end}}</table>
{{if .Launch.TinyLaunchers}}<p>Tiny kernels are launched most inside: {{range $i, $l := .Launch.TinyLaunchers}}{{if $i}}, {{end}}{{$l.Name}} {{$l.Kernels}} ({{dur $l.TotalNS}}){{end}}.</p>{{end}}
{{end}}{{end}}
</body>
</html>
`))
