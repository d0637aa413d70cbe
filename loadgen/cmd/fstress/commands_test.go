package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"regexp"
	"sort"
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

// TestEveryRefusalIsOneLine walks the refusals every command can raise at its flags: an
// unknown flag, an unexpected argument, and a value that does not parse for each of its
// flags that are not plain strings. Each is one line "fstress: …" naming what it refuses,
// exit 2, nothing on stdout. (The refusals of values that parse — ranges, workloads, file
// sets — are the tables of TestBadInputs, TestCheck… and TestProbeBadInputs.)
func TestEveryRefusalIsOneLine(t *testing.T) {
	var made []*flag.FlagSet
	flagSetMade = func(fs *flag.FlagSet) { made = append(made, fs) }
	defer func() { flagSetMade = nil }()
	refused := func(want string, args ...string) {
		t.Helper()
		code, out, stderr := runCLI(args...)
		if code != exitUsage || out != "" || strings.Count(stderr, "\n") != 1 ||
			!strings.HasPrefix(stderr, "fstress: ") || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want exit 2, one line naming %q)", args, code, out, stderr, want)
		}
	}
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	walked := 0
	for _, name := range names {
		if name == "workloads" || name == "merge" { // no flag set: merge's own parsing is below
			continue
		}
		made = nil
		refused("-no-such-flag", name, "--no-such-flag")
		if len(made) != 1 {
			t.Fatalf("%s: %d flag sets made, want 1", name, len(made))
		}
		refused("unexpected argument", name, "stray")
		made[0].VisitAll(func(f *flag.Flag) {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				return
			}
			refused("-"+f.Name, name, "--"+f.Name+"=x?")
			walked++
		})
	}
	if walked < 20 {
		t.Errorf("only %d typed flags walked", walked)
	}
	refused("merge: unknown flag --bogus", "merge", "--bogus")
	refused("merge: no result files given", "merge")
	refused("merge: --json needs a file name", "merge", "a.json", "--json")
	refused("no/such.json", "merge", "no/such.json")
	refused(`unknown command "bogus"`, "bogus")
}
