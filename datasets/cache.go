package datasets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Builtin is the built-in data set (tier xl, seed 1) in the user's cache
// folder, generated on first use (Cached).
func Builtin(warn io.Writer) (string, error) {
	tier, _ := ParseTier("xl")
	return Cached(tier, 1, warn)
}

// Cached is the data set of tier and seed in the user's cache folder
// (os.UserCacheDir, e.g. ~/.cache/ctxcode/pm-xl-1-v1), generated on first
// use, which warn hears of. A folder that holds a manifest is taken as it
// is.
func Cached(tier Tier, seed int64, warn io.Writer) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the cache folder for the built-in data (set XDG_CACHE_HOME or pass --data): %w", err)
	}
	dir := filepath.Join(cache, "ctxcode", fmt.Sprintf("pm-%s-%d-v%d", tier.Name, seed, GeneratorVersion))
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		return dir, nil
	}
	fmt.Fprintf(warn, "ctxcode: generating the built-in data set (tier %s, seed %d) into %s\n", tier.Name, seed, dir)
	if _, err := Generate(tier, seed).Write(dir, true); err != nil {
		return "", fmt.Errorf("write the built-in data set: %w", err)
	}
	return dir, nil
}
