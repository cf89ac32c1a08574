// Command sandbox serves the sandbox acquirer on SANDBOX_ADDR
// (127.0.0.1:8081). SANDBOX_API_KEY, when set, is required as a bearer
// credential on /v1 routes.
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/idempotent-payments/idempay/internal/sandbox"
)

func main() {
	addr := os.Getenv("SANDBOX_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8081"
	}
	srv := &http.Server{Addr: addr, Handler: sandbox.New(os.Getenv("SANDBOX_API_KEY")), ReadHeaderTimeout: 5 * time.Second}
	fmt.Println("sandbox acquirer on", addr)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}
