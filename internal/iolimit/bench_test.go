package iolimit

import (
	"context"
	"testing"
)

// The benchmarks measure the limiter's own cost per call on the real
// clock. "Limited" uses a rate far above what the loop can ask for, so
// every call takes the scheduling path but never sleeps.

func BenchmarkWaitUnlimited(b *testing.B) {
	for _, bc := range []struct {
		name string
		lim  *Limiter
	}{
		{"nil", nil},
		{"zero", New(Limits{})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if err := bc.lim.WaitWrite(ctx, 4096); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWaitLimited(b *testing.B) {
	const fast = 1 << 50 // bytes/s: never waits
	for _, bc := range []struct {
		name   string
		limits Limits
		prio   Priority
	}{
		{"foreground", Limits{WriteBytesPerSec: fast}, Foreground},
		{"background", Limits{WriteBytesPerSec: fast, BackgroundWriteBytesPerSec: fast}, Background},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := New(bc.limits)
			ctx := WithPriority(context.Background(), bc.prio)
			for b.Loop() {
				if err := l.WaitWrite(ctx, 4096); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			l := New(bc.limits)
			ctx := WithPriority(context.Background(), bc.prio)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := l.WaitWrite(ctx, 4096); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
