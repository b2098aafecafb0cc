package console_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestScreenshotsDocumented: the pictures the docs show are the ones the
// browser test takes (so they are made again with the page, never by
// hand), each exists, and each one taken is shown somewhere.
func TestScreenshotsDocumented(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, path := range append(docs, "../../README.md") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`console/([a-z0-9-]+)\.png`).FindAllStringSubmatch(string(data), -1) {
			shown[m[1]] = true
			if !slices.Contains(screenshots, m[1]) {
				t.Errorf("%s shows console/%s.png, which the browser test does not take", filepath.Base(path), m[1])
			}
		}
	}
	for _, name := range screenshots {
		if !shown[name] {
			t.Errorf("the browser test takes %s, which no doc shows", name)
		}
		if _, err := os.Stat(filepath.Join("..", "..", "docs", "console", name+".png")); err != nil {
			t.Errorf("docs/console/%s.png: %v (%s=docs/console go test -run '%s' ./internal/console takes it)", name, err, screenshotsEnv, screenshotTests)
		}
	}
	if files, _ := filepath.Glob("../../docs/console/*.png"); len(files) != len(screenshots) {
		var names []string
		for _, f := range files {
			names = append(names, strings.TrimSuffix(filepath.Base(f), ".png"))
		}
		t.Errorf("docs/console holds %v, want exactly %v", names, screenshots)
	}
}
