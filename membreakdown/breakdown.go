package membreakdown

import (
	"cmp"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devprof/devprof/event"
)

// Options change how a profile is broken down.
type Options struct {
	// ExpectedSum, when not 0, is the device memory in use that the
	// tracked bytes are compared with (nvidia-smi's figure, in bytes),
	// instead of the NVML figures the profile carries.
	ExpectedSum uint64
}

// A Report is a profile broken down by category.
type Report struct {
	// Time is when the profile was taken (zero when it does not say).
	Time time.Time
	// Categories are the dictionary's categories that matched at least
	// one buffer, largest first (ties in the dictionary's order), then
	// Others when some buffer matched nothing.
	Categories []Category
	// Tracked is the device memory the buffers hold, each buffer counted
	// once; Buffers how many buffers that is.
	Tracked uint64
	Buffers int
	// Devices are the device ordinals with tracked buffers or NVML
	// figures, ascending.
	Devices []int
	// NamedDevices are the devices with tracked buffers that have a name
	// and no ordinal (event.Buffer.DeviceName: JAX's "cpu:0"), ascending.
	NamedDevices []string
	// Host is the host memory left out of the breakdown.
	Host Amount
	// Untrackable is one entry per device with a figure (NVML), by
	// device; empty with Options.ExpectedSum. UntrackableTotal is for all
	// devices, nil when some device with tracked buffers has no figure.
	Untrackable      []Untrackable
	UntrackableTotal *Untrackable
	// MultiMatches are the buffers counted in several categories, one
	// entry per distinct Text, largest first.
	MultiMatches []MultiMatch
}

// An Amount is bytes held by a number of buffers.
type Amount struct {
	Bytes   uint64
	Buffers int
}

// A Category is the buffers of one category of the dictionary, or of
// Others.
type Category struct {
	Name string
	Amount
	// Devices splits Bytes by device, ascending by device.
	Devices []DeviceBytes
	// Tags sums the buffers by Text, largest first (ties by text). In
	// the dictionary's categories a text longer than 50 characters is
	// cut to 50 and ".." (MXNet's truncation, so rows of one layer add
	// up); in Others it is whole.
	Tags []TagBytes
}

// DeviceBytes is the bytes of a category on one device: ordinal Device,
// or, when Name is set, the named device (Device is then -1).
type DeviceBytes struct {
	Device int
	Name   string
	Bytes  uint64
}

// TagBytes is the bytes held by the buffers of one Text.
type TagBytes struct {
	Tag string
	Amount
}

// UntrackedFrom says where the figure Untrackable is computed from came
// from.
type UntrackedFrom string

// Where an Untrackable's expected figure came from.
const (
	// FromNVMLProcess is NVML's figure for this process on the device.
	FromNVMLProcess UntrackedFrom = "nvml-process"
	// FromNVMLUsed is NVML's figure for every process on the device (the
	// driver did not say this process's own).
	FromNVMLUsed UntrackedFrom = "nvml-used"
	// FromNVML is a total over devices whose figures are of both kinds.
	FromNVML UntrackedFrom = "nvml"
	// FromExpectedSum is Options.ExpectedSum.
	FromExpectedSum UntrackedFrom = "expected-sum"
)

// AllDevices is the Device of UntrackableTotal.
const AllDevices = -1

// Untrackable is the device memory in use that no tracked buffer
// explains, on one device or on all.
type Untrackable struct {
	Device   int           // AllDevices for the total
	Expected uint64        // what NVML or the caller said is in use
	From     UntrackedFrom // where Expected came from
	Tracked  uint64        // device memory tracked there
	// Bytes is Expected − Tracked; negative when more was tracked than
	// expected.
	Bytes int64
}

// MultiMatch is buffers whose Text matched several categories, and so
// were counted in each.
type MultiMatch struct {
	Text       string
	Categories []string // in the dictionary's order
	Amount
}

// truncateAt is the length MXNet cuts tags to in keyword categories.
const truncateAt = 50

// DefaultTag is the tag of a buffer allocated without tags:
// "unknown:<file>:<line>:<function>" from the innermost frame of its stack
// (the file's base name), or "unknown" without a stack.
func DefaultTag(stack []event.Frame) string {
	if len(stack) == 0 {
		return "unknown"
	}
	f := stack[0]
	return "unknown:" + path.Base(f.File) + ":" + strconv.Itoa(f.Line) + ":" + f.Function
}

// Text is what keywords are matched against: the buffer's tags joined
// with "," (DefaultTag of its call stack, past a CUDA binding's frames,
// when it has none), then " " and its span when it
// has one. It is also the tag column of the CSV.
func Text(b *event.Buffer) string {
	tags := strings.Join(b.Tags, ",")
	if tags == "" {
		tags = DefaultTag(b.CallStack())
	}
	if b.Span != "" {
		return tags + " " + b.Span
	}
	return tags
}

// OnDevice reports whether a buffer holds device memory (see
// event.Buffer.OnDevice): only such buffers are broken down and counted
// against NVML's figures.
func OnDevice(b *event.Buffer) bool { return b.OnDevice() }

// truncate cuts a text as MXNet does inside keyword categories, by
// characters.
func truncate(s string) string {
	if utf8.RuneCountInString(s) <= truncateAt {
		return s
	}
	i := 0
	for n := 0; n < truncateAt; n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + ".."
}

// catAcc accumulates one category.
type catAcc struct {
	name    string
	order   int // index in the dictionary; len(d) for Others
	amount  Amount
	devices map[deviceKey]uint64
	tags    map[string]*Amount
}

// deviceKey is a device ordinal, or a named device with ordinal -1.
type deviceKey struct {
	dev  int
	name string
}

func keyOf(b *event.Buffer) deviceKey {
	if b.DeviceName != "" {
		return deviceKey{-1, b.DeviceName}
	}
	return deviceKey{b.Device, ""}
}

func (c *catAcc) add(dev deviceKey, tag string, bytes uint64, n int) {
	c.amount.Bytes += bytes
	c.amount.Buffers += n
	c.devices[dev] += bytes
	t := c.tags[tag]
	if t == nil {
		t = &Amount{}
		c.tags[tag] = t
	}
	t.Bytes += bytes
	t.Buffers += n
}

// Categorize breaks m down by d's categories (see the package doc). d is
// used as it is: call Validate on a dictionary not read by
// ParseDictionary.
func Categorize(m *event.DeviceMemory, d Dictionary, o Options) *Report {
	r := &Report{Time: m.Time}
	accs := make([]*catAcc, len(d)+1)
	for i := range accs {
		name := Others
		if i < len(d) {
			name = d[i].Category
		}
		accs[i] = &catAcc{name: name, order: i, devices: map[deviceKey]uint64{}, tags: map[string]*Amount{}}
	}
	tracked := map[int]uint64{}
	multi := map[string]*MultiMatch{}
	for i := range m.Buffers {
		b := &m.Buffers[i]
		n := max(b.Count, 1)
		bytes := b.Total()
		if !OnDevice(b) {
			r.Host.Bytes += bytes
			r.Host.Buffers += n
			continue
		}
		r.Tracked += bytes
		r.Buffers += n
		dev := keyOf(b)
		if dev.name != "" {
			if !slices.Contains(r.NamedDevices, dev.name) {
				r.NamedDevices = append(r.NamedDevices, dev.name)
			}
		} else {
			tracked[b.Device] += bytes
		}
		text := Text(b)
		match := d.Match(text)
		if len(match) == 0 {
			accs[len(d)].add(dev, text, bytes, n)
			continue
		}
		for _, c := range match {
			accs[c].add(dev, truncate(text), bytes, n)
		}
		if len(match) > 1 {
			mm := multi[text]
			if mm == nil {
				mm = &MultiMatch{Text: text}
				for _, c := range match {
					mm.Categories = append(mm.Categories, d[c].Category)
				}
				multi[text] = mm
			}
			mm.Bytes += bytes
			mm.Buffers += n
		}
	}
	for _, a := range accs {
		if a.amount.Buffers == 0 {
			continue
		}
		c := Category{Name: a.name, Amount: a.amount}
		for dev, b := range a.devices {
			c.Devices = append(c.Devices, DeviceBytes{dev.dev, dev.name, b})
		}
		slices.SortFunc(c.Devices, func(x, y DeviceBytes) int {
			return cmp.Or(cmp.Compare(x.Name, y.Name), cmp.Compare(x.Device, y.Device))
		})
		for tag, amt := range a.tags {
			c.Tags = append(c.Tags, TagBytes{tag, *amt})
		}
		slices.SortFunc(c.Tags, func(x, y TagBytes) int {
			return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(x.Tag, y.Tag))
		})
		r.Categories = append(r.Categories, c)
	}
	order := func(name string) int {
		if name == Others {
			return len(d)
		}
		return slices.IndexFunc(d, func(x Rule) bool { return x.Category == name })
	}
	slices.SortStableFunc(r.Categories, func(x, y Category) int {
		if (x.Name == Others) != (y.Name == Others) {
			if x.Name == Others {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(order(x.Name), order(y.Name)))
	})
	for _, mm := range multi {
		r.MultiMatches = append(r.MultiMatches, *mm)
	}
	slices.SortFunc(r.MultiMatches, func(x, y MultiMatch) int {
		return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(x.Text, y.Text))
	})
	slices.Sort(r.NamedDevices)
	r.untrackable(m.Devices, tracked, o)
	return r
}

// untrackable fills in Devices, Untrackable and UntrackableTotal.
func (r *Report) untrackable(usage []event.DeviceUsage, tracked map[int]uint64, o Options) {
	devs := map[int]bool{}
	for d := range tracked {
		devs[d] = true
	}
	figures := map[int]event.DeviceUsage{}
	for _, u := range usage {
		if u.Device < 0 || u.Process == 0 && u.Used == 0 { // nothing measured
			continue
		}
		if _, dup := figures[u.Device]; !dup {
			figures[u.Device] = u
			devs[u.Device] = true
		}
	}
	for d := range devs {
		r.Devices = append(r.Devices, d)
	}
	slices.Sort(r.Devices)
	if o.ExpectedSum > 0 {
		r.UntrackableTotal = newUntrackable(AllDevices, o.ExpectedSum, FromExpectedSum, r.Tracked)
		return
	}
	var total *Untrackable
	complete := true
	for _, d := range r.Devices {
		u, ok := figures[d]
		if !ok {
			complete = false
			continue
		}
		expected, from := u.Process, FromNVMLProcess
		if expected == 0 {
			expected, from = u.Used, FromNVMLUsed
		}
		r.Untrackable = append(r.Untrackable, *newUntrackable(d, expected, from, tracked[d]))
		if total == nil {
			total = &Untrackable{Device: AllDevices, From: from}
		} else if total.From != from {
			total.From = FromNVML
		}
		total.Expected += expected
		total.Tracked += tracked[d]
	}
	if complete && total != nil {
		r.UntrackableTotal = newUntrackable(AllDevices, total.Expected, total.From, total.Tracked)
	}
}

func newUntrackable(dev int, expected uint64, from UntrackedFrom, tracked uint64) *Untrackable {
	return &Untrackable{Device: dev, Expected: expected, From: from, Tracked: tracked, Bytes: diff(expected, tracked)}
}

// diff is a − b as an int64, saturating where it does not fit.
func diff(a, b uint64) int64 {
	const maxInt = uint64(1<<63 - 1)
	if a >= b {
		return int64(min(a-b, maxInt))
	}
	return -int64(min(b-a, maxInt))
}

// Category returns the category of that name, or nil.
func (r *Report) Category(name string) *Category {
	for i := range r.Categories {
		if r.Categories[i].Name == name {
			return &r.Categories[i]
		}
	}
	return nil
}

// DeviceBytes returns the bytes of the category on device dev.
func (c *Category) DeviceBytes(dev int) uint64 {
	for _, d := range c.Devices {
		if d.Device == dev && d.Name == "" {
			return d.Bytes
		}
	}
	return 0
}

// NamedDeviceBytes returns the bytes of the category on the named device
// (Report.NamedDevices).
func (c *Category) NamedDeviceBytes(name string) uint64 {
	for _, d := range c.Devices {
		if d.Name == name && name != "" {
			return d.Bytes
		}
	}
	return 0
}

// UntrackableOn returns the Untrackable of device dev (AllDevices for the
// total), or nil when there is no figure for it.
func (r *Report) UntrackableOn(dev int) *Untrackable {
	if dev == AllDevices {
		return r.UntrackableTotal
	}
	for i := range r.Untrackable {
		if r.Untrackable[i].Device == dev {
			return &r.Untrackable[i]
		}
	}
	return nil
}
