package idem

import (
	"container/list"
	"sync"
)

// cache is a bounded LRU of completed records. A completed record never
// changes until it expires, so serving it from memory is as good as reading
// it; in-flight records are never put here.
type cache struct {
	mu    sync.Mutex
	limit int
	order *list.List // front = most recent; values are *Record
	byPK  map[string]*list.Element
}

func newCache(limit int) *cache {
	return &cache{limit: limit, order: list.New(), byPK: map[string]*list.Element{}}
}

func (c *cache) get(pk string) *Record {
	if c.limit <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byPK[pk]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*Record)
}

func (c *cache) put(rec *Record) {
	if c.limit <= 0 || rec.Status != StatusCompleted {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byPK[rec.PK]; ok {
		e.Value = rec
		c.order.MoveToFront(e)
		return
	}
	c.byPK[rec.PK] = c.order.PushFront(rec)
	for c.order.Len() > c.limit {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.byPK, oldest.Value.(*Record).PK)
	}
}
