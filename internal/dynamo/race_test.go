package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/idem"
)

const raceRounds = 200

// roundResult is what one process saw in one round.
type roundResult struct {
	Acquired int `json:"acquired"`
	InFlight int `json:"in_flight"`
}

// claimRound has n goroutines claim the round's key at once and counts what
// they got. Anything but a lease or ErrInFlight fails the round.
func claimRound(guard *idem.Guard, round, n int) (roundResult, error) {
	s := idem.Scope{Operation: "charge", Account: "acct_race", Key: fmt.Sprintf("race-round-%04d", round)}
	req := idem.Canonical{{Name: "amount", Value: "100"}}
	var (
		mu  sync.Mutex
		res roundResult
		bad error
		wg  sync.WaitGroup
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			c, err := guard.Begin(context.Background(), s, req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && c.Lease != nil:
				res.Acquired++
			case errors.Is(err, idem.ErrInFlight):
				res.InFlight++
			default:
				bad = fmt.Errorf("round %d: claim %+v, err %v", round, c, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return res, bad
}

// TestRaceGoroutines: 50 goroutines claim one key at once, 200 rounds;
// exactly one acquires each round.
func TestRaceGoroutines(t *testing.T) {
	t.Parallel()
	client := dynamotest.Client(t)
	guard := idem.NewGuard(dynamo.Open(client, dynamotest.NewTable(t, client)).Store(), idem.Config{})
	for round := range raceRounds {
		res, err := claimRound(guard, round, 50)
		if err != nil {
			t.Fatal(err)
		}
		if res.Acquired != 1 || res.InFlight != 49 {
			t.Fatalf("round %d: %d acquired, %d in flight; want 1 and 49", round, res.Acquired, res.InFlight)
		}
	}
}

// TestRaceProcesses: 3 OS processes × 17 goroutines claim one key at once,
// 200 time-slotted rounds; exactly one of the 51 acquires each round.
func TestRaceProcesses(t *testing.T) {
	if os.Getenv("IDEM_RACE_CHILD") == "1" {
		raceChild(t)
		return
	}
	t.Parallel()
	const processes, slot = 3, 60 * time.Millisecond
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	start := time.Now().Add(2 * time.Second) // time for every child to start
	outs := make([][]byte, processes)
	errs := make([]error, processes)
	var wg sync.WaitGroup
	for p := range processes {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRaceProcesses$", "-test.v=false")
		cmd.Env = append(os.Environ(),
			"IDEM_RACE_CHILD=1",
			"IDEM_RACE_TABLE="+table,
			"IDEM_RACE_START="+strconv.FormatInt(start.UnixMilli(), 10),
			"IDEM_RACE_SLOT="+slot.String(),
		)
		wg.Go(func() { outs[p], errs[p] = cmd.Output() })
	}
	wg.Wait()
	totals := make([]roundResult, raceRounds)
	for p := range processes {
		if errs[p] != nil {
			t.Fatalf("process %d: %v\n%s", p, errs[p], outs[p])
		}
		var rounds []roundResult
		if err := json.Unmarshal(lastLine(outs[p]), &rounds); err != nil || len(rounds) != raceRounds {
			t.Fatalf("process %d output: %v\n%s", p, err, outs[p])
		}
		for i, r := range rounds {
			totals[i].Acquired += r.Acquired
			totals[i].InFlight += r.InFlight
		}
	}
	for i, r := range totals {
		if r.Acquired != 1 || r.InFlight != 50 {
			t.Fatalf("round %d: %d of 51 acquired across processes, %d in flight; want 1 and 50", i, r.Acquired, r.InFlight)
		}
	}
}

func raceChild(t *testing.T) {
	startMs, _ := strconv.ParseInt(os.Getenv("IDEM_RACE_START"), 10, 64)
	slot, _ := time.ParseDuration(os.Getenv("IDEM_RACE_SLOT"))
	client := dynamotest.Client(t)
	guard := idem.NewGuard(dynamo.Open(client, os.Getenv("IDEM_RACE_TABLE")).Store(), idem.Config{})
	rounds := make([]roundResult, raceRounds)
	for round := range raceRounds {
		time.Sleep(time.Until(time.UnixMilli(startMs).Add(time.Duration(round) * slot)))
		res, err := claimRound(guard, round, 17)
		if err != nil {
			t.Fatal(err)
		}
		rounds[round] = res
	}
	out, _ := json.Marshal(rounds)
	fmt.Printf("\n%s\n", out)
}

func lastLine(b []byte) []byte {
	lines := splitLines(b)
	for i := len(lines) - 1; i >= 0; i-- {
		if len(lines[i]) > 0 && lines[i][0] == '[' {
			return lines[i]
		}
	}
	return nil
}

func splitLines(b []byte) [][]byte {
	var lines [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		lines = append(lines, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return lines
}
