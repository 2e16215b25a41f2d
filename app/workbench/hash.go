package workbench

import (
	"context"

	"sparkbench/app/study"
	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// HashCache keeps file hashes in the notebook's artefacts table, keyed by path, size, mtime,
// device and inode.
type HashCache struct{ NB *store.Notebook }

// Lookup is hashing.Cache's lookup.
func (c HashCache) Lookup(ctx context.Context, k hashing.Key) (string, bool, error) {
	a, ok, err := c.NB.CachedArtefactFile(ctx, k.Path, k.Size, k.MTime, k.CTime, k.Dev, k.Inode)
	if err != nil || !ok || a.SHA256 == "" {
		return "", false, err
	}
	return a.SHA256, true, nil
}

// Store is hashing.Cache's store.
func (c HashCache) Store(ctx context.Context, k hashing.Key, sum string) error {
	_, err := c.NB.UpsertArtefact(ctx, store.Artefact{Path: k.Path, Size: k.Size, MTime: k.MTime, Dev: k.Dev, Inode: k.Inode, CTime: k.CTime, SHA256: sum})
	return err
}

// HashShow shows a file being hashed: each step of one not found in the cache (done false),
// then done true once it is hashed. Nil shows nothing.
type HashShow func(p hashing.Progress, done bool)

// CachedHash hashes files through the notebook's cache.
func CachedHash(ctx context.Context, nb *store.Notebook, show HashShow) study.HashFunc {
	return hashThrough(ctx, HashCache{nb}, show)
}

// RegistrationHash is CachedHash for registering a plan: it reads the notebook's cache, but
// holds the hashes it computes until commit is called, once the plan is accepted. A refused
// plan (a MISMATCH model) so writes nothing to the notebook, not even a hash-cache row.
func RegistrationHash(ctx context.Context, nb *store.Notebook, show HashShow) (hash study.HashFunc, commit func(context.Context) error) {
	c := &heldHashCache{nb: HashCache{nb}}
	return hashThrough(ctx, c, show), c.commit
}

// heldHashCache looks hashes up in the notebook and keeps new ones in memory until commit.
type heldHashCache struct {
	nb   HashCache
	held []heldHash
}

type heldHash struct {
	k   hashing.Key
	sum string
}

func (c *heldHashCache) Lookup(ctx context.Context, k hashing.Key) (string, bool, error) {
	for _, h := range c.held {
		if h.k == k {
			return h.sum, true, nil
		}
	}
	return c.nb.Lookup(ctx, k)
}

func (c *heldHashCache) Store(_ context.Context, k hashing.Key, sum string) error {
	c.held = append(c.held, heldHash{k, sum})
	return nil
}

// commit writes the held hashes to the notebook's cache.
func (c *heldHashCache) commit(ctx context.Context) error {
	for _, h := range c.held {
		if err := c.nb.Store(ctx, h.k, h.sum); err != nil {
			return err
		}
	}
	c.held = nil
	return nil
}

// hashThrough hashes files through cache c, shown by show.
func hashThrough(ctx context.Context, c hashing.Cache, show HashShow) study.HashFunc {
	return func(path string) (string, error) {
		var progress func(hashing.Progress)
		if show != nil {
			progress = func(p hashing.Progress) { show(p, false) }
		}
		sum, cached, err := hashing.Cached(ctx, c, path, progress)
		if show != nil && !cached {
			show(hashing.Progress{}, true)
		}
		return sum, err
	}
}

// KindTrustCache is the journal kind of a run that took its models' hashes from the notebook's
// cache (--trust-cache) instead of reading the files before its first leg.
const KindTrustCache = "models.trust_cache"

// RunHash is the hash a run checks its models with before its first leg. It reads each file
// again whatever the cache holds (a model written in place with its size, mtime, inode and
// ctime put back would hit the cache) and stores the result in the cache; within the run a
// file whose key did not move is read once. With trust (--trust-cache, for models too large to
// read at every run), it takes the cache's hash as registration does, and the run journals
// models.trust_cache, so the receipt says the files were not read.
func RunHash(ctx context.Context, nb *store.Notebook, studyID int64, show HashShow, trust bool) (study.HashFunc, error) {
	if trust {
		if _, err := nb.AppendJournal(ctx, KindTrustCache, map[string]any{"study": studyID, "by": "--trust-cache"}, store.ForStudy(studyID)); err != nil {
			return nil, err
		}
		return CachedHash(ctx, nb, show), nil
	}
	return hashThrough(ctx, &freshHashCache{nb: HashCache{nb}, read: map[hashing.Key]string{}}, show), nil
}

// freshHashCache misses every file it has not read itself in this run, and stores what it
// reads in the notebook's cache too.
type freshHashCache struct {
	nb   HashCache
	read map[hashing.Key]string
}

func (c *freshHashCache) Lookup(_ context.Context, k hashing.Key) (string, bool, error) {
	sum, ok := c.read[k]
	return sum, ok, nil
}

func (c *freshHashCache) Store(ctx context.Context, k hashing.Key, sum string) error {
	c.read[k] = sum
	return c.nb.Store(ctx, k, sum)
}
