// Package regfile reads small files that someone else put in the pod (a downward-API volume, a
// peer's mark in a shared emptyDir) without trusting them: only a regular file is read, after
// an open that cannot block (a FIFO put there would hold the reader forever, deaf to signals),
// and never more than a bound, whatever its size says (/proc and /sys files claim sizes they do
// not have). Standard library only: the pod binary uses it.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// TooLarge is the error for a file larger than the bound.
type TooLarge struct {
	Limit int
	Size  int64 // what its size said, or -1 when it lied
}

func (e *TooLarge) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("larger than %d bytes", e.Limit)
	}
	return fmt.Sprintf("larger than %d bytes (%d)", e.Limit, e.Size)
}

// Read reads the regular file at path (following symlinks), at most limit bytes. Anything else
// (a FIFO, a device, a directory, a socket) is refused after a non-blocking open, and so is a file
// larger than limit (a *TooLarge). Errors say what is wrong with the file
// without its path, which the caller names.
func Read(path string, limit int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, unwrapPath(err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s, not a regular file", Kind(fi.Mode()))
	case fi.Size() > int64(limit):
		return nil, &TooLarge{Limit: limit, Size: fi.Size()}
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot read it: %w", unwrapPath(err))
	case len(data) > limit:
		return nil, &TooLarge{Limit: limit, Size: -1}
	}
	return data, nil
}

// unwrapPath drops the *fs.PathError's operation and path, which the caller names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Kind names a file type that is not a regular file, for a message: "a named pipe (FIFO)".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file (" + m.Type().String() + ")"
}
