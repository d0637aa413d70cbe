package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// errLine prints one line "fstress: <msg>" (newlines flattened).
func errLine(w io.Writer, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, "\r", " "), "\n", " ")
	fmt.Fprintf(w, "fstress: %s\n", msg)
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// checkJSONPath reports an output file that cannot be written: a directory,
// or in a directory that does not exist (so that no work is wasted).
func checkJSONPath(jsonPath string) error {
	if st, e := os.Stat(jsonPath); e == nil && st.IsDir() {
		return fmt.Errorf("--json %s is a directory", jsonPath)
	}
	if dir := dirOf(jsonPath); dir != "" {
		if st, e := os.Stat(dir); e != nil || !st.IsDir() {
			return fmt.Errorf("--json %s: directory %s does not exist", jsonPath, dir)
		}
	}
	return nil
}

func dirOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	if i == 0 {
		return "/"
	}
	return p[:i]
}
