package peers

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// team is a Team of the given peers in a new directory, as container self.
func team(t *testing.T, self string, peers ...string) Team {
	t.Helper()
	return Team{Dir: t.TempDir(), Self: self, Peers: peers}
}

// as is the same team seen from another of its containers.
func (t Team) as(self string) Team { t.Self = self; return t }

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMarks: a container is running once started, ended with its code once ended, and running
// again once restarted in place.
func TestMarks(t *testing.T) {
	tm := team(t, "main", "main", "wait")
	if got := Read(tm.Dir, "main"); got != (Mark{State: NotStarted}) {
		t.Errorf("before Start: %+v", got)
	}
	steps := []struct {
		do   func() error
		want Mark
	}{
		{tm.Start, Mark{State: Running}},
		{func() error { return tm.End(3) }, Mark{State: Ended, Code: 3}},
		{tm.Start, Mark{State: Running}}, // restarted in place: no longer ended
		{func() error { return tm.End(0) }, Mark{State: Ended}},
	}
	for i, s := range steps {
		mustOK(t, s.do())
		if got := Read(tm.Dir, "main"); got != s.want {
			t.Errorf("step %d: %+v, want %+v", i, got, s.want)
		}
	}
	entries, err := os.ReadDir(tm.Dir)
	mustOK(t, err)
	if len(entries) != 1 || entries[0].Name() != "main" {
		t.Errorf("the directory holds %v, want the mark alone (no temporary file left)", entries)
	}
	fi, err := os.Stat(filepath.Join(tm.Dir, "main"))
	mustOK(t, err)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mark mode %v, want 0644: the pod's containers may run as different users", fi.Mode().Perm())
	}
}

// TestReadWhatIsNoMark: a mark that cannot be read or understood counts as running (the sidecars
// stay); no mark at all is a container that has not started. Nothing blocks: a FIFO is refused
// after a non-blocking open.
func TestReadWhatIsNoMark(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) { mustOK(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)) }
	write("empty", "")
	write("garbage", "\x00\xff quit now")
	write("ended-no-code", "ended\n")
	write("ended-bad-code", "ended three\n")
	write("ended-extra", "ended 3 4\n")
	write("ended-ok", " ended 7 \n")
	mustOK(t, os.Mkdir(filepath.Join(dir, "a-directory"), 0o755))
	mustOK(t, syscall.Mkfifo(filepath.Join(dir, "a-fifo"), 0o644))
	mustOK(t, os.Symlink("/dev/zero", filepath.Join(dir, "a-device")))
	got := map[string]Mark{}
	for _, name := range []string{"absent", "empty", "garbage", "ended-no-code", "ended-bad-code", "ended-extra", "ended-ok", "a-directory", "a-fifo", "a-device"} {
		got[name] = Read(dir, name)
	}
	running := Mark{State: Running}
	want := map[string]Mark{"absent": {State: NotStarted}, "empty": running, "garbage": running, "ended-no-code": running,
		"ended-bad-code": running, "ended-extra": running, "ended-ok": {State: Ended, Code: 7}, "a-directory": running,
		"a-fifo": running, "a-device": running}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("marks (-want +got):\n%s", diff)
	}
	if os.Geteuid() != 0 {
		write("unreadable", "ended 0\n")
		mustOK(t, os.Chmod(filepath.Join(dir, "unreadable"), 0))
		if got := Read(dir, "unreadable"); got != running {
			t.Errorf("an unreadable mark: %+v, want running", got)
		}
	}
}

// TestOthers: the other containers' marks, sorted into running, not started and ended; this
// container's own mark and files of no peer are not looked at.
func TestOthers(t *testing.T) {
	tm := team(t, "a", "a", "b", "c", "d")
	mustOK(t, tm.End(0))
	mustOK(t, tm.as("b").Start())
	mustOK(t, tm.as("c").End(1))
	mustOK(t, os.WriteFile(filepath.Join(tm.Dir, "e"), []byte("running\n"), 0o644)) // no peer's
	mustOK(t, os.WriteFile(filepath.Join(tm.Dir, ".d.tmp-123"), []byte("ended 0\n"), 0o644))
	got := tm.Others()
	if diff := cmp.Diff(Status{Running: []string{"b"}, NotStarted: []string{"d"}, Ended: []string{"c"}}, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got.Last() {
		t.Error("Last with b running and d not started")
	}
	mustOK(t, tm.as("b").End(0))
	mustOK(t, tm.as("d").End(0))
	if got := tm.Others(); !got.Last() {
		t.Errorf("not Last with every other ended: %+v", got)
	}
}

// TestEndingAtOnce: containers that end at the same moment never all leave the quit to another:
// each writes its end before it reads the others', so at least one sees itself the last. Run
// many times, with every container's End and Others racing.
func TestEndingAtOnce(t *testing.T) {
	names := []string{"a", "b", "c"}
	for i := range 200 {
		tm := team(t, "a", names...)
		for _, n := range names {
			mustOK(t, tm.as(n).Start())
		}
		last := make([]bool, len(names))
		var ready, wg sync.WaitGroup
		ready.Add(len(names))
		start := make(chan struct{})
		for j, n := range names {
			wg.Go(func() {
				ready.Done()
				<-start
				if err := tm.as(n).End(0); err != nil {
					t.Error(err)
				}
				last[j] = tm.as(n).Others().Last()
			})
		}
		ready.Wait()
		close(start)
		wg.Wait()
		if !last[0] && !last[1] && !last[2] {
			t.Fatalf("run %d: no container saw itself the last: the sidecars would never be told to quit", i)
		}
	}
}

// TestWritesAreAtomic: a reader racing a writer reads a whole mark, the old or the new, never
// part of one.
func TestWritesAreAtomic(t *testing.T) {
	tm := team(t, "a", "a")
	mustOK(t, tm.Start())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			if i%2 == 0 {
				tm.End(100 + i%100)
			} else {
				tm.Start()
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		b, err := os.ReadFile(filepath.Join(tm.Dir, "a"))
		mustOK(t, err)
		if s := string(b); s != "running\n" && (len(s) != len("ended 100\n") || s[:6] != "ended ") {
			t.Fatalf("read %q: part of a mark", s)
		}
	}
}

// TestAwaitStart: while the only containers not ended are some that never started, AwaitStart
// waits for one to start (hand over), for all to end, or for ctx; otherwise it returns at once.
func TestAwaitStart(t *testing.T) {
	t.Run("a peer starts", func(t *testing.T) {
		tm := team(t, "a", "a", "b", "c")
		mustOK(t, tm.End(0))
		got := make(chan Status, 1)
		go func() { got <- tm.AwaitStart(context.Background(), time.Millisecond) }()
		mustOK(t, tm.as("c").Start())
		select {
		case s := <-got:
			if diff := cmp.Diff(Status{Running: []string{"c"}, NotStarted: []string{"b"}}, s); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("AwaitStart did not see c start")
		}
	})
	t.Run("a peer starts and ends between two looks", func(t *testing.T) {
		tm := team(t, "a", "a", "b")
		mustOK(t, tm.End(0))
		got := make(chan Status, 1)
		go func() { got <- tm.AwaitStart(context.Background(), time.Millisecond) }()
		mustOK(t, tm.as("b").End(0))
		select {
		case s := <-got:
			if !s.Last() {
				t.Errorf("status %+v, want every other ended", s)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("AwaitStart did not see b end")
		}
	})
	t.Run("at once when a peer runs", func(t *testing.T) {
		tm := team(t, "a", "a", "b", "c")
		mustOK(t, tm.as("b").Start())
		// An hour between looks and no deadline: only returning at once passes.
		if s := tm.AwaitStart(context.Background(), time.Hour); len(s.Running) != 1 {
			t.Errorf("status %+v", s)
		}
	})
	t.Run("the bound", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tm := team(t, "a", "a", "b")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := time.Now()
			s := tm.AwaitStart(ctx, 100*time.Millisecond)
			if diff := cmp.Diff(Status{NotStarted: []string{"b"}}, s); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if waited := time.Since(start); waited != 2*time.Minute {
				t.Errorf("waited %v, want the bound, 2m", waited)
			}
		})
	})
}

// TestWriteErrors: a mark cannot be written outside its directory, nor into one that is not
// there (the shared volume is not mounted).
func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"../x", "", "a/b", ".hidden", "UPPER"} {
		if err := (Team{Dir: dir, Self: name}).Start(); err == nil {
			t.Errorf("Start as %q: no error", name)
		}
	}
	if err := (Team{Dir: filepath.Join(dir, "absent"), Self: "a"}).Start(); err == nil {
		t.Error("Start into a missing directory: no error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %v behind", entries)
	}
}

// TestLeave: a container that cannot mark its end removes its mark, so that the others take it
// for one that never started (bounded) rather than one that runs (forever).
func TestLeave(t *testing.T) {
	dir := t.TempDir()
	a := Team{Dir: dir, Self: "a", Peers: []string{"a", "b"}}
	b := Team{Dir: dir, Self: "b", Peers: []string{"a", "b"}}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if st := b.Others(); len(st.Running) != 1 {
		t.Fatalf("before: %+v, want a running", st)
	}
	if err := a.Leave(); err != nil {
		t.Fatal(err)
	}
	if st := b.Others(); len(st.Running) != 0 || len(st.NotStarted) != 1 {
		t.Errorf("after Leave: %+v, want a not started", st)
	}
	if err := a.Leave(); err != nil {
		t.Errorf("a second Leave: %v", err)
	}
}
