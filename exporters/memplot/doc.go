// Package memplot draws device memory by category as images, SVG or PNG:
// the breakdown of a memory profile as one stacked bar per device (as
// MXNet's GPU memory profiler drew it), and each device's memory over a
// trace as stacked step areas, where a category that only grows (a leak)
// shows at a glance. devprof memory breakdown -plot and devprof memory
// timeline -plot are its command-line form.
//
// Its place in devprof's flow is at the end, as an exporter of the
// device-memory side of the model:
//
//	devmem → event.DeviceMemory → membreakdown.Report → memplot.EncodeBreakdown → .svg, .png
//	trace → event.Snapshot.MemoryTimelines → []memplot.Timeline → memplot.EncodeTimeline → .svg, .png
//
// It is a package of its own, not part of membreakdown, so that the
// analysis stays free of a plotting library and its fonts for programs
// that only want the numbers.
//
// # Drawing
//
// EncodeBreakdown and EncodeTimeline write an image of the Format given to
// an io.Writer; WriteBreakdown and WriteTimeline write a file whose
// extension (.svg or .png, see FormatOf) picks the format, whole or not at
// all (it appears only once written):
//
//	r := membreakdown.Categorize(profile, membreakdown.DefaultDictionary(), membreakdown.Options{})
//	if err := memplot.WriteBreakdown("memory.png", r); err != nil {
//		return err
//	}
//
// A Timeline is one device's bytes by category at each time a trace's
// memory changed (the points of event.Snapshot.MemoryTimelines, summed by
// category); Timeline.Validate says what is wrong with one built by hand.
// Host memory's timeline (HostDevice) has a panel titled "host" and a
// value axis of its own; the GPUs share theirs. In a breakdown another
// backend's devices (JAX's "cpu:0") have bars after the GPUs'.
//
// # Look
//
// In a breakdown, categories are stacked in the report's order, the largest at the
// bottom, then Others (grey) and, on top, Untrackable (light grey,
// hatched). Categories take their colours in that order from one palette,
// so the same report always gives the same colours. The legend, at the
// right, lists the stack top to bottom. The value axis is in GiB, MiB or
// KiB, the largest unit the tallest stack reaches one of.
//
// # Costs
//
// Drawing is pure Go (gonum.org/v1/plot, with the Liberation fonts it
// embeds): no cgo, no system fonts. A breakdown is a few dozen shapes and
// draws in milliseconds. A timeline draws every time point of every
// series, so its cost grows with the trace's allocations and frees: a few
// thousand points draw in tens of milliseconds, while a hundred thousand
// take the better part of a second as SVG (and make megabytes of it) and
// several seconds as PNG.
//
// The user guide is docs/device-memory.md ("Breakdown by category" and
// "Memory over time").
package memplot
