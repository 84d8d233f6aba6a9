package main

import (
	"container/list"
	"sync"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/inject"
)

// lru is the resolver's cache: at most max entries, the least recently used dropped first; an
// entry with an expiry is dropped once past it. Safe for concurrent use.
type lru struct {
	max int

	mu    sync.Mutex
	order *list.List // of *lruEntry, most recently used first
	byKey map[string]*list.Element
}

type lruEntry struct {
	key     string
	img     inject.ResolvedImage
	expires time.Time // zero: never (an image pinned to a digest)
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the entry for key, unless it has expired.
func (c *lru) get(key string, now time.Time) (inject.ResolvedImage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return inject.ResolvedImage{}, false
	}
	e := el.Value.(*lruEntry)
	if !e.expires.IsZero() && !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.byKey, key)
		return inject.ResolvedImage{}, false
	}
	c.order.MoveToFront(el)
	return e.img, true
}

// put stores img under key until expires (zero: until evicted).
func (c *lru) put(key string, img inject.ResolvedImage, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		e := el.Value.(*lruEntry)
		e.img, e.expires = img, expires
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&lruEntry{key: key, img: img, expires: expires})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*lruEntry).key)
	}
}

// len is the number of entries, expired ones included until they are looked up or evicted.
func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
