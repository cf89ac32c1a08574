package chaos

import (
	"os"
	"path/filepath"
)

// moduleRoot is the repository's folder: the one up from here with go.mod
// and localstack/, or this folder when there is none.
func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "localstack")); err == nil {
				return d
			}
		}
	}
	return dir
}
