//go:build cgo

package cuptiwrap

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
)

// subscriber is the process's one CUPTI subscriber. CUPTI allows one per
// process, and both the Collector (which subscribes to learn whether
// another profiler owns CUPTI) and the memory hooks (whose callbacks it
// carries) need it, each starting and stopping on its own: the first user
// subscribes, the last one to leave unsubscribes.
var subscriber struct {
	sync.Mutex
	lib    *library
	handle C.dpc_subscriber
	users  int
}

// subscribe joins the subscriber, subscribing if it is the first user.
// Another CUPTI client owning the process comes back as the *Error of
// cuptiSubscribe ([ErrProfilerConflict]).
func subscribe(l *library) (C.dpc_subscriber, error) {
	s := &subscriber
	s.Lock()
	defer s.Unlock()
	if s.users > 0 {
		if s.lib != l {
			return nil, fmt.Errorf("cuptiwrap: CUPTI is in use in this process through %s, and this asks for %s: "+
				"the collector and the memory hooks must load the same libcupti (set the same Library, or neither)",
				s.lib.info.Path, l.info.Path)
		}
		s.users++
		return s.handle, nil
	}
	var h C.dpc_subscriber
	if err := l.check("cuptiSubscribe", C.dpc_subscribe(l.c, &h), ""); err != nil {
		return nil, err
	}
	s.lib, s.handle, s.users = l, h, 1
	return h, nil
}

// unsubscribe leaves the subscriber, unsubscribing if it was the last user.
func unsubscribe() error {
	s := &subscriber
	s.Lock()
	defer s.Unlock()
	if s.users == 0 {
		return nil
	}
	s.users--
	if s.users > 0 {
		return nil
	}
	l, h := s.lib, s.handle
	s.lib, s.handle = nil, nil
	return l.check("cuptiUnsubscribe", C.dpc_unsubscribe(l.c, h), "")
}
