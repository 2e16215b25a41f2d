package ui

import (
	"context"
	"sync"

	"fyne.io/fyne/v2/widget"
)

// opCancel is a Cancel button for background operations: enabled while one runs, it cancels
// every operation started through it. Operations report how they ended themselves (a
// cancelled one says so, and what it left).
type opCancel struct {
	Button *widget.Button

	mu      sync.Mutex
	next    int
	cancels map[int]context.CancelFunc
}

func newOpCancel(label string) *opCancel {
	o := &opCancel{cancels: map[int]context.CancelFunc{}}
	o.Button = widget.NewButton(label, o.cancelAll)
	o.Button.Disable()
	return o
}

// start begins an operation: its context, and end, to call on the UI goroutine when it is over.
func (o *opCancel) start() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	o.mu.Lock()
	id := o.next
	o.next++
	o.cancels[id] = cancel
	o.mu.Unlock()
	o.Button.Enable()
	return ctx, func() {
		cancel()
		o.mu.Lock()
		delete(o.cancels, id)
		idle := len(o.cancels) == 0
		o.mu.Unlock()
		if idle {
			o.Button.Disable()
		}
	}
}

func (o *opCancel) cancelAll() {
	o.mu.Lock()
	for _, c := range o.cancels {
		c()
	}
	o.mu.Unlock()
}
