package console_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// failOnScriptErrors makes the test fail for every exception the page's
// scripts throw and nobody catches (a broken handler shows up as nothing
// happening on a click; this names the line instead).
func failOnScriptErrors(t *testing.T, ctx context.Context) {
	var mu sync.Mutex
	var seen []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok && e.ExceptionDetails != nil {
			d := e.ExceptionDetails
			text := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				text = d.Exception.Description
			}
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s:%d: %s", d.URL, d.LineNumber+1, text))
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			t.Errorf("script error in the page: %s", s)
		}
	})
}
