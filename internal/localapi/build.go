package localapi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// BuildFunctions builds each named function (functions/<name>) for this
// machine into dir/<name>/bootstrap, as the Makefile builds them for Lambda
// but for the local OS and architecture.
func BuildFunctions(ctx context.Context, dir string, names ...string) error {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	for _, name := range names {
		out := filepath.Join(dir, name, "bootstrap")
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, "./functions/"+name)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", name, err, b)
		}
	}
	return nil
}
