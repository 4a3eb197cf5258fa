package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/errandhq/errand/internal/store/filelock"
	"github.com/errandhq/errand/internal/store/storeurl"
)

// lockDataDir takes the data directory for this process: an exclusive
// flock on DIR/errand.lock, which holds the owner's pid. A second errand
// dev on the directory is refused, naming the first one's pid. The kernel
// drops the lock when the process ends, however it ends (filelock).
func lockDataDir(dir string) (release func(), err error) {
	release, holder, err := filelock.Lock(filepath.Join(dir, "errand.lock"), "errand dev")
	if errors.Is(err, filelock.ErrHeld) {
		return nil, fmt.Errorf("the data directory %s is in use by another errand dev (%s): stop it, or give this one another --data", dir, holder.Process())
	}
	return release, err
}

// lockSQLite takes the store at rawURL for this process's node, who
// ("errand serve", "errand dev"; see storeurl.LockNode): a second node on
// a SQLite file would run every service (deliveries, leases' expiry,
// schedules) a second time, so it is refused, naming the holder, and
// instead says what to do. Commands that only read or write the store
// briefly (keys, restore) do not take it.
func lockSQLite(rawURL, who, instead string) (release func(), err error) {
	release, err = storeurl.LockNode(rawURL, who)
	var iu *storeurl.InUseError
	if errors.As(err, &iu) {
		return nil, fmt.Errorf("%w; %s", err, instead)
	}
	return release, err
}
