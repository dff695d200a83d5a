package artifacts

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

// VerifySource returns the verify.Source for proving the build's files.
//
// Each table file is read, checked against the manifest's sha256 (a changed
// file is an error, as everywhere), and compared with the bytes this
// mrcgen's generator writes for the same fabric (whose file the manifest's
// sha256 pins too). When every file is those bytes, the files hold exactly
// the generator's entries, and the proof can walk the generator's lookups
// without parsing 3 million entries back: the source it returns does that
// and names the build's files in failures. When any file differs (a build
// of another mrcgen version, or an edit whose digest was re-recorded), it
// returns the Build itself, and the proof reads every entry from the files.
// same reports which it was.
func (b *Build) VerifySource(ctx context.Context) (src verify.Source, same bool, err error) {
	g := tables.NewGenerator(b.Plan)
	same, err = b.sameAsGenerated(ctx, g)
	if err != nil {
		return nil, false, err
	}
	if !same {
		return b, false, nil
	}
	return generatedSource{GeneratorSource: verify.GeneratorSource{G: g}, b: b}, true, nil
}

// Verify proves the build as verify.Run(b) does, faster when its files
// are the bytes this mrcgen generates (same): it proves through the
// generator's lookups while, alongside, every file is read, checked
// against the manifest and compared with the generator's bytes; the
// proof's report is kept only if they are equal, and otherwise the proof
// is made again from the files. A changed file is an error, as
// everywhere.
func (b *Build) Verify(ctx context.Context, opt verify.Options) (rep *verify.Report, same bool, err error) {
	g := tables.NewGenerator(b.Plan)
	spec, cancel := context.WithCancel(ctx) // the proof through the generator
	defer cancel()
	type checked struct {
		same bool
		err  error
	}
	done := make(chan checked, 1)
	go func() {
		same, err := b.sameAsGenerated(ctx, g)
		if err != nil || !same {
			cancel() // the proof through the generator is of no use
		}
		done <- checked{same, err}
	}()
	src := generatedSource{GeneratorSource: verify.GeneratorSource{G: g}, b: b}
	rep, rerr := verify.Run(spec, b.Plan, src, opt)
	c := <-done
	if c.err != nil {
		return nil, false, c.err
	}
	if c.same {
		return rep, true, rerr
	}
	rep, err = verify.Run(ctx, b.Plan, b, opt)
	return rep, false, err
}

// generatedSource walks the generator and names the build's files.
type generatedSource struct {
	verify.GeneratorSource
	b *Build
}

func (s generatedSource) SwitchFile(sw plan.Switch) string { return s.b.SwitchFile(sw) }
func (s generatedSource) NICFile(h plan.Host, table string) string {
	return s.b.NICFile(h, table)
}
func (s generatedSource) NICCommonFile() string { return s.b.NICCommonFile() }

// sameAsGenerated reports whether every table file of the manifest is the
// one g writes, checking each file's sha256 on the way.
func (b *Build) sameAsGenerated(ctx context.Context, g *tables.Generator) (bool, error) {
	lay := b.layout()
	jobs := tableJobs(b.Plan, g, lay)
	if len(jobs) != len(b.Manifest.Files) {
		return false, nil
	}
	for _, j := range jobs {
		if _, ok := b.Manifest.Files[j.path]; !ok {
			return false, nil
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var differ atomic.Bool
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Go(func() {
			var buf []byte
			var r renderer
			tr := tableReader{b: b}
			defer tr.close()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) || ctx.Err() != nil || differ.Load() {
					return
				}
				j := &jobs[i]
				data, fi, err := tr.read(j.path)
				if err == nil {
					if got := sha256Hex(data); got != fi.SHA256 {
						err = &ChecksumError{Dir: b.Dir, File: j.path, Want: fi.SHA256, Got: got}
					}
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				buf, _ = j.render(buf[:0], &r, lay.Encoding)
				if !bytes.Equal(buf, data) {
					differ.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return false, firstErr
	}
	if err := ctx.Err(); err != nil && !differ.Load() {
		return false, err
	}
	return !differ.Load(), nil
}
