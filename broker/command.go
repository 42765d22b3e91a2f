package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// trustedPath is where process.run looks up a bare program name: system
// directories only, never the workspace or anything relative.
var trustedPath = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

var errNotFound = errors.New("command not found")

// resolveExecutable returns the absolute, symlink-free path of an executable
// regular file.
func resolveExecutable(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q is not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s", errNotFound, path)
		}
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", path)
	}
	return real, nil
}

// lookupCommand resolves what an agent named as the program of process.run:
// an absolute path, or a bare name found on trustedPath. Relative paths are
// refused.
func lookupCommand(name string) (string, error) {
	if filepath.IsAbs(name) {
		return resolveExecutable(name)
	}
	if name == "" || strings.ContainsRune(name, '/') {
		return "", fmt.Errorf("program %q must be an absolute path or a bare name", name)
	}
	for _, dir := range trustedPath {
		p, err := resolveExecutable(filepath.Join(dir, name))
		if err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s", errNotFound, name)
}
