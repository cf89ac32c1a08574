package localapi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// Functions are the binaries of the stack's functions (functions/<name>,
// deploy's Binaries), as the Makefile's FUNCTIONS lists them for AWS (a
// test holds the two equal).
var Functions = deploy.Local().Binaries()

// BuildFunctions builds each named function (functions/<name>) for this
// machine into dir/<name>/bootstrap.
func BuildFunctions(ctx context.Context, dir string, names ...string) error {
	for _, name := range names {
		if err := Build(ctx, filepath.Join(dir, name, "bootstrap"), "./functions/"+name); err != nil {
			return err
		}
	}
	return nil
}

// Build builds the Lambda bootstrap of pkg (a path from the module's root,
// such as ./functions/charge) into out, as the Makefile builds it for
// Lambda but for the local OS and architecture.
func Build(ctx context.Context, out, pkg string) error {
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg)
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", pkg, err, b)
	}
	return nil
}
