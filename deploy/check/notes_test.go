package check

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelmChartNotes: the install notes (templates/NOTES.txt, which helm
// template does not print: rendered here from a copy of the chart as a
// manifest) say how to reach the agents over gRPC, the headless Service,
// and the console on the HTTP Service.
func TestHelmChartNotes(t *testing.T) {
	src := filepath.Join(repoRoot(t), "deploy", "helm", "floe")
	dst := filepath.Join(t.TempDir(), "floe")
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy the chart: %v %s", err, out)
	}
	notes, err := os.ReadFile(filepath.Join(dst, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wrapped := "notes: |\n  " + strings.ReplaceAll(string(notes), "\n", "\n  ") + "\n"
	if err := os.WriteFile(filepath.Join(dst, "templates", "notes-as-manifest.yaml"), []byte(wrapped), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helmBin(t), append([]string{"template", "floe", dst, "--namespace", "streams",
		"--show-only", "templates/notes-as-manifest.yaml"}, baseArgs...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("render the notes: %v\n%s", err, out)
	}
	for _, want := range []string{
		"floe-agent.streams.svc:7070",
		"dns:///floe-agent-headless.streams.svc:7070",
		"bootstrap.servers=floe-agent.streams.svc:9092",
		"port-forward svc/floe-agent-http 7071",
		"http://127.0.0.1:7071/console/",
		"helm test floe",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the install notes do not say %q:\n%s", want, out)
		}
	}
}
