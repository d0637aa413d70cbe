package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// TestCommandsListed keeps the command map, the package doc, the usage and
// the unknown-command line in step.
func TestCommandsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	var errb bytes.Buffer
	if code := run([]string{"frobnicate"}, &bytes.Buffer{}, &errb); code != exitUsage {
		t.Fatalf("unknown command: exit %d", code)
	}
	unknown := errb.String()
	listed := regexp.MustCompile(`(?m)^  ([a-z]+) `).FindAllStringSubmatch(usage, -1)
	if len(listed) != len(commands) {
		t.Errorf("usage lists %d commands, the map has %d", len(listed), len(commands))
	}
	for name, cmd := range commands {
		if !regexp.MustCompile(`(?m)^\s*fstress ` + name + ` +` + regexp.QuoteMeta(cmd.help) + `$`).MatchString(doc) {
			t.Errorf("package doc lacks %q: %q", name, cmd.help)
		}
		if !strings.Contains(usage, "\n  "+name+" ") {
			t.Errorf("usage lacks %q", name)
		}
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(unknown) {
			t.Errorf("unknown-command line lacks %q: %s", name, unknown)
		}
	}
}
