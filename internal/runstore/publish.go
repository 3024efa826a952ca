package runstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Publish places files staged under the local directory staging (paths
// relative to it, slash-separated) at dst, a directory or a bucket URL,
// in the order given, none replacing what is there: a file already at
// dst is an error naming it, before anything is placed when dst is
// local. Locally a file is hard-linked (renamed where the file system
// has no links), so that it appears whole; in a bucket it is uploaded
// create-only. On an error the files placed locally are removed again
// (with the directories Publish made that stay empty); a bucket's
// uploaded objects stay, as nothing here deletes objects, and the error
// says how many. It returns where the files went.
func Publish(ctx context.Context, staging string, files []string, dst string) ([]string, error) {
	if IsURL(dst) {
		var placed []string
		for i, rel := range files {
			to := Join(dst, strings.Split(rel, "/")...)
			err := Put(ctx, to, filepath.Join(staging, filepath.FromSlash(rel)), PutOptions{NoOverwrite: true})
			if err != nil {
				if errors.Is(err, ErrExist) {
					err = fmt.Errorf("%s is already there", Display(to))
				}
				if i > 0 {
					err = fmt.Errorf("%w; %d of the %d files were uploaded before it", err, i, len(files))
				}
				return placed, err
			}
			placed = append(placed, to)
		}
		return placed, nil
	}
	for _, rel := range files { // all or nothing: look before placing any
		to := filepath.Join(dst, filepath.FromSlash(rel))
		if _, err := os.Lstat(to); err == nil {
			return nil, fmt.Errorf("%s is already there", to)
		}
	}
	var placed []string
	for _, rel := range files {
		from := filepath.Join(staging, filepath.FromSlash(rel))
		to := filepath.Join(dst, filepath.FromSlash(rel))
		err := os.MkdirAll(filepath.Dir(to), 0o755)
		if err == nil {
			err = Place(from, to)
		}
		if err != nil {
			Unplace(dst, placed)
			return nil, err
		}
		placed = append(placed, to)
	}
	return placed, nil
}

// Place puts the local file from at to, whole: a hard link, or a rename
// where the file system has no links. It never replaces a file at to: one
// there is an error that wraps fs.ErrExist.
func Place(from, to string) error {
	err := os.Link(from, to)
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s is already there: %w", to, fs.ErrExist)
	}
	if _, serr := os.Lstat(to); !errors.Is(serr, os.ErrNotExist) {
		return err
	}
	if rerr := os.Rename(from, to); rerr != nil {
		return err
	}
	return nil
}

// Unplace removes files placed under dst, and the directories below dst
// they leave empty: what takes a failed or interrupted publication back.
func Unplace(dst string, placed []string) {
	for _, p := range placed {
		os.Remove(p)
		for dir := filepath.Dir(p); len(dir) > len(dst); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
	}
}
