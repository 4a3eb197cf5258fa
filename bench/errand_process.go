package main

// errand_process.go builds the errand binary and runs `errand serve` as an
// external process: start it, wait until it is healthy, read its CPU time
// and peak RSS, stop it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var errandBuild struct {
	once     sync.Once
	bin, dir string
	err      error
}

// errandBinary builds ./cmd/errand of the repository once per harness run
// (untimed), or returns --errand-bin.
func errandBinary(o Options) (string, error) {
	if o.ErrandBin != "" {
		return o.ErrandBin, nil
	}
	b := &errandBuild
	b.once.Do(func() {
		root, err := filepath.Abs(o.ErrandRoot)
		if err != nil {
			b.err = err
			return
		}
		if _, err := os.Stat(filepath.Join(root, "cmd", "errand")); err != nil {
			b.err = fmt.Errorf("no errand source at %s (run the harness from bench/, or give --errand-src or --errand-bin): %v", root, err)
			return
		}
		b.dir, b.err = os.MkdirTemp("", "bench-errand-bin-")
		if b.err != nil {
			return
		}
		atExit(func() { os.RemoveAll(b.dir) })
		b.bin = filepath.Join(b.dir, "errand")
		cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/errand")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build ./cmd/errand in %s: %v\n%s", root, err, out)
			return
		}
		logf("bench: built %s from %s", b.bin, root)
	})
	return b.bin, b.err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// tailFile returns the last n lines of a file, for error messages.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// --- external process ----------------------------------------------------------

// externalProcess is a server process started for one run.
type externalProcess struct {
	cmd  *exec.Cmd
	done chan error
}

// startExternal starts bin with args and waits until GET healthURL answers
// 200 (or the process exits, or timeout passes). Its output goes to out
// (os.Stderr if nil).
func startExternal(ctx context.Context, healthURL string, timeout time.Duration, env []string, out io.Writer, bin string, args ...string) (*externalProcess, error) {
	if out == nil {
		out = os.Stderr
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &externalProcess{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, healthURL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case err := <-p.done:
			return nil, fmt.Errorf("%s exited before it was healthy: %v", bin, err)
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("%s not healthy after %s", bin, timeout)
		}
	}
}

// Pid is the process id, for /proc readings.
func (p *externalProcess) Pid() string { return strconv.Itoa(p.cmd.Process.Pid) }

// CPUSeconds is the user+system CPU time the process has used so far.
func (p *externalProcess) CPUSeconds() float64 {
	own, _ := procCPUSeconds(p.Pid())
	return own
}

// PeakRSSMB is the process's peak RSS so far (a fresh process per run, so
// this is the run's peak, or the peak since ResetPeakRSS).
func (p *externalProcess) PeakRSSMB() float64 { return peakRSSMB(p.Pid()) }

// ResetPeakRSS resets the process's peak RSS (VmHWM) to its current RSS.
func (p *externalProcess) ResetPeakRSS() { resetPeakRSSOf(p.Pid()) }

// Stop sends SIGTERM to the process group, and SIGKILL after 15 s.
func (p *externalProcess) Stop() error {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
		return errors.New("process did not stop on SIGTERM; killed")
	}
}
