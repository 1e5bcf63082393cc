package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

const logsDir = "logs"

// cappedLog appends a stream's full output to a file until max bytes,
// then writes one line saying it stopped and drops the rest. An error
// stops the logging and is told to onError (the process's status notes
// it): a log must never block or fail the process.
type cappedLog struct {
	mu      sync.Mutex
	f       *os.File
	n, max  int64
	done    bool
	onError func(path string, err error)
}

func (l *cappedLog) Write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	room := l.max - l.n
	if int64(len(p)) > room {
		p = p[:max(room, 0)]
		l.done = true
	}
	if len(p) > 0 {
		k, err := l.f.Write(p)
		l.n += int64(k)
		if err != nil {
			l.done = true
			if l.onError != nil {
				l.onError(l.f.Name(), err)
			}
			return
		}
	}
	if l.done {
		fmt.Fprintf(l.f, "\n[toolbox: log capped at %d bytes; the rest was dropped]\n", l.max)
	}
}

func (l *cappedLog) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	l.f.Close()
}

// logPair is a process's two log files.
type logPair struct {
	out, err *cappedLog
	paths    LogFiles
}

// openLogs creates <stateDir>/logs/<id>.stdout.log and .stderr.log (mode
// 0600), each capped at maxBytes. A restarted process appends to them.
func openLogs(stateDir, id string, maxBytes int64) (*logPair, error) {
	paths := logPaths(stateDir, id)
	out, err := openLog(paths.Stdout, maxBytes)
	if err != nil {
		return nil, err
	}
	errl, err := openLog(paths.Stderr, maxBytes)
	if err != nil {
		out.Close()
		return nil, err
	}
	return &logPair{out: out, err: errl, paths: paths}, nil
}

func logPaths(stateDir, id string) LogFiles {
	dir := filepath.Join(stateDir, logsDir)
	return LogFiles{Stdout: filepath.Join(dir, id+".stdout.log"), Stderr: filepath.Join(dir, id+".stderr.log")}
}

func openLog(path string, maxBytes int64) (*cappedLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log file: %w", err)
	}
	return &cappedLog{f: f, max: maxBytes}, nil
}

func (l *logPair) write(s Stream, p []byte) {
	if s == Stderr {
		l.err.Write(p)
	} else {
		l.out.Write(p)
	}
}

func (l *logPair) close() {
	l.out.Close()
	l.err.Close()
}

func removeLogs(stateDir, id string) {
	p := logPaths(stateDir, id)
	os.Remove(p.Stdout)
	os.Remove(p.Stderr)
}
