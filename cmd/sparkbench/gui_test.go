package main

import (
	"bytes"
	"image"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sparkbench/runner/sharedtest"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/ui/uitest"
)

// TestWindowOpensUnderXvfb builds the real binary, starts it on a private Xvfb and checks that a
// window titled "sparkbench" is mapped and that the screen shows a rendered interface (not a
// blank or black frame). SPARKBENCH_SCREENSHOT_DIR keeps the screenshot for a human to look at.
func TestWindowOpensUnderXvfb(t *testing.T) {
	for _, tool := range []string{"xwininfo", "import"} {
		if _, err := exec.LookPath(tool); err != nil {
			sharedtest.Require(t, tool+" not installed: run make setup (x11-utils and imagemagick)")
		}
	}
	bin := builtBinary(t)
	display := uitest.StartXvfb(t, 1280, 800)
	tmp := t.TempDir()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DISPLAY="+display,
		"XDG_CONFIG_HOME="+filepath.Join(tmp, "config"), "XDG_DATA_HOME="+filepath.Join(tmp, "data"), "SPARKBENCH_NOTEBOOK="+filepath.Join(tmp, "notebook.db"))
	cmd.Dir = filepath.Join("..", "..") // the repo root, so doctor finds testdata/models
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()

	deadline := time.Now().Add(90 * time.Second)
	for {
		out, _ := exec.Command("xwininfo", "-display", display, "-root", "-tree").Output()
		if strings.Contains(string(out), `"sparkbench"`) {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("sparkbench exited before its window appeared: %v\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no window titled sparkbench within 90 s; windows:\n%s\nlog:\n%s", out, log.String())
		}
		time.Sleep(250 * time.Millisecond)
	}

	// Wait for the first frames and the doctor check, then take a screenshot of the root window.
	var colours int
	var png []byte
	for i := 0; i < 40; i++ {
		time.Sleep(500 * time.Millisecond)
		var err error
		png, err = exec.Command("import", "-display", display, "-window", "root", "png:-").Output()
		if err != nil {
			continue
		}
		img, _, err := image.Decode(bytes.NewReader(png))
		if err != nil {
			t.Fatalf("decode screenshot: %v", err)
		}
		if colours = distinctColours(img); colours >= 16 {
			break
		}
	}
	if dir := os.Getenv("SPARKBENCH_SCREENSHOT_DIR"); dir != "" && png != nil {
		_ = os.WriteFile(filepath.Join(dir, "window.png"), png, 0o644)
	}
	if colours < 16 {
		t.Fatalf("screen shows %d distinct colours: the window did not render\nlog:\n%s", colours, log.String())
	}
	t.Logf("window rendered: %d distinct colours on screen", colours)
}

func distinctColours(img image.Image) int {
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
		}
	}
	return len(seen)
}
