// Package mlpdemo is the built-in workload of `devprof demo`: a small
// multi-layer perceptron trained with data-parallel SGD in pure Go on a
// synthetic three-class spiral data set. It is annotated the way a real
// training program would be (steps; data loading handed over with a flow;
// per-worker forward, backward and optimizer spans with shapes as
// arguments; loss and accuracy counters), so its trace looks like ML work.
package mlpdemo

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/devprof/devprof/annotate"
)

// Config sizes the workload. Zero fields take the defaults.
type Config struct {
	Steps   int       // training steps (default 40)
	Workers int       // data-parallel worker goroutines (default 4)
	Batch   int       // examples per step (default 256)
	Hidden  int       // hidden layer width (default 64)
	Seed    uint64    // data and initialisation seed (default 1)
	Out     io.Writer // progress lines; nil for none
}

// Result is what training achieved.
type Result struct {
	Steps     int
	FirstLoss float64
	LastLoss  float64
	Accuracy  float64 // on the last batch
}

const (
	inputs  = 2
	classes = 3
)

var (
	lossCounter = annotate.Counter{Name: "loss"}
	accCounter  = annotate.Counter{Name: "accuracy", Unit: "%"}
	lrCounter   = annotate.Counter{Name: "learning_rate"}
)

func (c *Config) defaults() {
	if c.Steps <= 0 {
		c.Steps = 40
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Batch <= 0 {
		c.Batch = 256
	}
	if c.Batch < c.Workers {
		c.Batch = c.Workers
	}
	if c.Hidden <= 0 {
		c.Hidden = 64
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
}

// dense is a fully connected layer: y = x·W + b.
type dense struct {
	name    string
	in, out int
	w, b    []float64
}

func newDense(name string, in, out int, rng *rand.Rand) *dense {
	d := &dense{name: name, in: in, out: out, w: make([]float64, in*out), b: make([]float64, out)}
	scale := math.Sqrt(2 / float64(in))
	for i := range d.w {
		d.w[i] = rng.NormFloat64() * scale
	}
	return d
}

type model struct{ l1, l2, l3 *dense }

func (m *model) layers() []*dense { return []*dense{m.l1, m.l2, m.l3} }

type grads struct{ w, b [][]float64 }

func newGrads(m *model) *grads {
	g := &grads{}
	for _, l := range m.layers() {
		g.w = append(g.w, make([]float64, len(l.w)))
		g.b = append(g.b, make([]float64, len(l.b)))
	}
	return g
}

func (g *grads) zero() {
	for i := range g.w {
		clear(g.w[i])
		clear(g.b[i])
	}
}

type batch struct {
	id int
	x  []float64 // n × inputs
	y  []int
}

// spiral returns n points of a three-armed spiral, the classic toy problem
// a linear model cannot solve.
func spiral(n int, rng *rand.Rand) ([]float64, []int) {
	x := make([]float64, n*inputs)
	y := make([]int, n)
	for i := range n {
		c := i % classes
		r := rng.Float64()
		t := float64(c)*4 + r*4 + rng.NormFloat64()*0.2
		x[i*2] = r * math.Sin(t)
		x[i*2+1] = r * math.Cos(t)
		y[i] = c
	}
	return x, y
}

// Run trains the model, recording spans into the running trace session (if
// any) as a child of the span in ctx.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, 2))
	ctx, all := annotate.Begin(ctx, "train_mlp",
		annotate.Int("steps", cfg.Steps), annotate.Int("workers", cfg.Workers),
		annotate.Int("batch", cfg.Batch), annotate.Int("hidden", cfg.Hidden))
	defer all.End()

	var m *model
	annotate.Run(ctx, "init_params", func(context.Context) {
		m = &model{
			l1: newDense("dense1", inputs, cfg.Hidden, rng),
			l2: newDense("dense2", cfg.Hidden, cfg.Hidden, rng),
			l3: newDense("dense3", cfg.Hidden, classes, rng),
		}
	}, annotate.String("init", "he_normal"))

	// The loader produces batches ahead of the training loop, as an input
	// pipeline does; each batch's flow links its loading to its step.
	batches := make(chan batch, 2)
	flows := make(chan uint64, 2)
	loaderCtx, loader := annotate.Begin(context.Background(), "input_pipeline")
	go func() {
		defer loader.End()
		defer close(batches)
		lrng := rand.New(rand.NewPCG(cfg.Seed, 3))
		for i := range cfg.Steps {
			id := annotate.NewFlowID()
			_, sp := annotate.Begin(loaderCtx, "load_batch", annotate.Int("batch_id", i), annotate.Int("examples", cfg.Batch), annotate.Flow(id))
			x, y := spiral(cfg.Batch, lrng)
			sp.End()
			flows <- id
			batches <- batch{id: i, x: x, y: y}
		}
	}()

	workerGrads := make([]*grads, cfg.Workers)
	for i := range workerGrads {
		workerGrads[i] = newGrads(m)
	}
	total := newGrads(m)
	var res Result
	lr := 0.5
	step := 0
	for b := range batches {
		flow := <-flows
		sctx, st := annotate.Step(ctx, "train", int64(step), annotate.Flow(flow))
		losses := make([]float64, cfg.Workers)
		correct := make([]int, cfg.Workers)
		var wg sync.WaitGroup
		shard := cfg.Batch / cfg.Workers
		for w := range cfg.Workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lo, hi := w*shard, (w+1)*shard
				if w == cfg.Workers-1 {
					hi = cfg.Batch
				}
				wctx, ws := annotate.Begin(sctx, "worker", annotate.Int("replica", w), annotate.Int("examples", hi-lo))
				defer ws.End()
				losses[w], correct[w] = m.trainShard(wctx, b.x[lo*inputs:hi*inputs], b.y[lo:hi], workerGrads[w])
			}()
		}
		wg.Wait()

		annotate.Run(sctx, "allreduce", func(ctx context.Context) {
			total.zero()
			for _, g := range workerGrads {
				for i := range g.w {
					axpy(total.w[i], g.w[i], 1/float64(cfg.Batch))
					axpy(total.b[i], g.b[i], 1/float64(cfg.Batch))
				}
			}
		}, annotate.Int("replicas", cfg.Workers), annotate.String("op", "mean"))

		annotate.Run(sctx, "sgd_update", func(ctx context.Context) {
			for i, l := range m.layers() {
				_, sp := annotate.BeginLevel(ctx, annotate.LevelInfo, "update/"+l.name, annotate.Int("params", len(l.w)+len(l.b)))
				axpy(l.w, total.w[i], -lr)
				axpy(l.b, total.b[i], -lr)
				sp.End()
			}
		}, annotate.Float64("lr", lr))

		loss := 0.0
		hits := 0
		for w := range cfg.Workers {
			loss += losses[w]
			hits += correct[w]
		}
		loss /= float64(cfg.Batch)
		acc := 100 * float64(hits) / float64(cfg.Batch)
		lossCounter.Set(loss)
		accCounter.Set(acc)
		lrCounter.Set(lr)
		if step == 0 {
			res.FirstLoss = loss
		}
		res.LastLoss, res.Accuracy = loss, acc
		if step > 0 && step%10 == 0 {
			annotate.Instant(sctx, "checkpoint", annotate.Int("step", step), annotate.Float64("loss", loss))
		}
		st.End()
		step++
		if cfg.Out != nil && (step%10 == 0 || step == cfg.Steps) {
			fmt.Fprintf(cfg.Out, "  step %3d/%d  loss %.4f  accuracy %5.1f%%\n", step, cfg.Steps, loss, acc)
		}
		if step == cfg.Steps*2/3 {
			lr /= 2
		}
	}
	res.Steps = step
	if math.IsNaN(res.LastLoss) {
		return res, fmt.Errorf("training diverged")
	}
	return res, nil
}

// trainShard runs forward and backward on one shard, accumulating gradients
// into g; it returns the summed loss and the number of correct predictions.
func (m *model) trainShard(ctx context.Context, x []float64, y []int, g *grads) (float64, int) {
	n := len(y)
	g.zero()
	var h1, a1, h2, a2, logits []float64
	fctx, fw := annotate.Begin(ctx, "forward", annotate.Int("examples", n))
	h1 = m.l1.forward(fctx, x, n)
	a1 = relu(fctx, h1)
	h2 = m.l2.forward(fctx, a1, n)
	a2 = relu(fctx, h2)
	logits = m.l3.forward(fctx, a2, n)
	fw.End()

	_, ls := annotate.Begin(ctx, "softmax_xent", annotate.Int("classes", classes))
	dlogits := make([]float64, len(logits))
	loss := 0.0
	correct := 0
	for i := range n {
		row := logits[i*classes : (i+1)*classes]
		mx, arg := row[0], 0
		for c, v := range row {
			if v > mx {
				mx, arg = v, c
			}
		}
		if arg == y[i] {
			correct++
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		for c, v := range row {
			p := math.Exp(v-mx) / sum
			dlogits[i*classes+c] = p
			if c == y[i] {
				loss -= math.Log(p + 1e-12)
				dlogits[i*classes+c] -= 1
			}
		}
	}
	ls.End()

	bctx, bw := annotate.Begin(ctx, "backward", annotate.Int("examples", n))
	da2 := m.l3.backward(bctx, a2, dlogits, n, g.w[2], g.b[2])
	reluBackward(h2, da2)
	da1 := m.l2.backward(bctx, a1, da2, n, g.w[1], g.b[1])
	reluBackward(h1, da1)
	m.l1.backward(bctx, x, da1, n, g.w[0], g.b[0])
	bw.End()
	return loss, correct
}

func (d *dense) forward(ctx context.Context, x []float64, n int) []float64 {
	_, sp := annotate.Begin(ctx, d.name+"/matmul",
		annotate.String("shape", fmt.Sprintf("[%d,%d]x[%d,%d]", n, d.in, d.in, d.out)),
		annotate.Int64("flops", int64(2*n*d.in*d.out)))
	defer sp.End()
	y := make([]float64, n*d.out)
	for i := range n {
		row := y[i*d.out : (i+1)*d.out]
		copy(row, d.b)
		for k := range d.in {
			xv := x[i*d.in+k]
			if xv == 0 {
				continue
			}
			axpy(row, d.w[k*d.out:(k+1)*d.out], xv)
		}
	}
	return y
}

// backward accumulates dW and db and returns dX.
func (d *dense) backward(ctx context.Context, x, dy []float64, n int, dw, db []float64) []float64 {
	_, sp := annotate.Begin(ctx, d.name+"/grad",
		annotate.String("shape", fmt.Sprintf("[%d,%d]", d.in, d.out)))
	defer sp.End()
	dx := make([]float64, n*d.in)
	for i := range n {
		dyr := dy[i*d.out : (i+1)*d.out]
		axpy(db, dyr, 1)
		for k := range d.in {
			xv := x[i*d.in+k]
			if xv != 0 {
				axpy(dw[k*d.out:(k+1)*d.out], dyr, xv)
			}
			wr := d.w[k*d.out : (k+1)*d.out]
			s := 0.0
			for j, v := range dyr {
				s += v * wr[j]
			}
			dx[i*d.in+k] = s
		}
	}
	return dx
}

func relu(ctx context.Context, x []float64) []float64 {
	_, sp := annotate.BeginLevel(ctx, annotate.LevelInfo, "relu", annotate.Int("elements", len(x)))
	defer sp.End()
	y := make([]float64, len(x))
	for i, v := range x {
		if v > 0 {
			y[i] = v
		}
	}
	return y
}

func reluBackward(h, d []float64) {
	for i, v := range h {
		if v <= 0 {
			d[i] = 0
		}
	}
}

// axpy computes y += a·x.
func axpy(y, x []float64, a float64) {
	for i, v := range x {
		y[i] += a * v
	}
}
