package install

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/verifier/skill"
)

const (
	childRootEnv     = "STOCKADE_INSTALL_CRASH_ROOT"
	childArchivesEnv = "STOCKADE_INSTALL_CRASH_ARCHIVES"
	crashVariants    = 4
)

// TestCrashDuringInstall re-executes the test binary as a child that
// installs and removes releases in a loop, kills it with SIGKILL at a random
// moment, and checks the root: every installed directory Loads cleanly with
// the exact files of its release, and Clean removes whatever staging or trash
// the kill left, after which the root holds installed skills only.
func TestCrashDuringInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("kills subprocesses; skipped with -short")
	}
	archives := t.TempDir()
	skills := map[skill.Digest]*skill.Skill{}
	for i := range crashVariants {
		archive, envelope := buildArchive(t, variant{seq: i + 1, bigAsset: 512 << 10 * (i + 1)})
		sk := openSkill(t, archive, envelope)
		skills[sk.StatementDigest] = sk
		must(t, os.WriteFile(filepath.Join(archives, fmt.Sprint(i, ".skill")), archive, 0o600))
		must(t, os.WriteFile(filepath.Join(archives, fmt.Sprint(i, ".skill.sig")), envelope, 0o600))
	}
	root := newRoot(t)
	must(t, os.Mkdir(root, 0o700))

	const minRounds, maxRounds = 20, 100
	leftovers, installedSeen := 0, 0
	for round := 0; round < maxRounds && (round < minRounds || leftovers == 0); round++ {
		runAndKill(t, root, archives, time.Duration(rand.IntN(20_000))*time.Microsecond)

		digests, err := List(root)
		if err != nil {
			t.Fatalf("round %d: List: %v", round, err)
		}
		for _, d := range digests {
			sk, ok := skills[d]
			if !ok {
				t.Fatalf("round %d: unknown directory %s", round, d.Hex())
			}
			got, err := Load(root, d)
			if err != nil {
				t.Fatalf("round %d: a kill left a half-installed skill: %v", round, err)
			}
			sameFiles(t, got, sk)
			installedSeen++
		}
		removed, err := Clean(root)
		if err != nil {
			t.Fatalf("round %d: Clean: %v", round, err)
		}
		leftovers += len(removed)
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Fatalf("round %d: Clean left %s", round, e.Name())
			}
		}
	}
	t.Logf("staging or trash directories cleaned: %d; installed skills verified: %d", leftovers, installedSeen)
	if leftovers == 0 {
		t.Fatalf("no kill landed inside an install or removal in %d rounds: the test proved nothing", maxRounds)
	}
	// The root still works: every release installs and loads.
	for _, sk := range skills {
		mustInstall(t, root, sk)
		got, err := Load(root, sk.StatementDigest)
		if err != nil {
			t.Fatal(err)
		}
		sameFiles(t, got, sk)
	}
}

// runAndKill starts the child, waits until it is installing, lets it run
// for d and kills it with SIGKILL.
func runAndKill(t *testing.T, root, archives string, d time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childRootEnv+"="+root, childArchivesEnv+"="+archives)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "installing\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not start: %q, %v; stderr: %s", line, err, stderr.String())
	}
	time.Sleep(d)
	must(t, cmd.Process.Kill())
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("child ended before the kill: %v; stderr: %s", err, stderr.String())
	}
}

// TestCrashChild is the child of TestCrashDuringInstall: it loops forever,
// removing and installing the releases it is given, until killed.
func TestCrashChild(t *testing.T) {
	root, archives := os.Getenv(childRootEnv), os.Getenv(childArchivesEnv)
	if root == "" || archives == "" {
		t.Skip("the child of TestCrashDuringInstall")
	}
	var skills []*skill.Skill
	for i := range crashVariants {
		archive, err := os.ReadFile(filepath.Join(archives, fmt.Sprint(i, ".skill")))
		must(t, err)
		envelope, err := os.ReadFile(filepath.Join(archives, fmt.Sprint(i, ".skill.sig")))
		must(t, err)
		skills = append(skills, openSkill(t, archive, envelope))
	}
	fmt.Println("installing")
	for i := rand.IntN(len(skills)); ; i++ {
		sk := skills[i%len(skills)]
		if err := Remove(root, sk.StatementDigest); err != nil && !errors.Is(err, ReasonNotInstalled) {
			t.Fatalf("Remove: %v", err)
		}
		if _, err := Install(root, sk); err != nil {
			t.Fatalf("Install: %v", err)
		}
	}
}
