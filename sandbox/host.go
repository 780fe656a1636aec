package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/tlsconfig"
)

// Host says which Docker daemon kernels run on, and how to reach it. The
// zero value is the daemon the docker command would use: DOCKER_CONTEXT,
// else DOCKER_HOST, else the Docker CLI's current context
// (currentContext in $DOCKER_CONFIG/config.json, ~/.docker by default),
// else the local socket.
type Host struct {
	// Name is a daemon URL or a Docker context name (one made by docker
	// context create; "default" is the environment's daemon). URLs:
	// unix:///path; tcp://host:port, with TLS as the Docker CLI sets it
	// (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH); ssh://[user@]host[:port][/socket],
	// where the remote side runs `docker system dial-stdio` (the docker
	// CLI must be there; /socket names the daemon's socket on that
	// machine). Empty: the environment's, as above.
	Name string
	// SSHFlags are more flags for ssh, such as "-i", "KEY" or "-F",
	// "FILE"; ssh also reads ~/.ssh/config as usual. Default: the
	// $CTXCODE_SSH_FLAGS environment variable, split at spaces. ssh gets
	// the options of sshDefaults unless they name them: BatchMode=yes (it
	// runs without a terminal, so the key must not need a passphrase
	// typed; an ssh-agent's keys work), and keepalives that end the
	// connections to a host that stopped answering within 30 seconds.
	SSHFlags []string
	// ControlDir holds the sockets ssh shares connections by
	// (ControlMaster=auto, ControlPersist=SSHPersist): an attach reuses
	// the first connection to a host instead of a new handshake. Its path
	// must be short (a socket path holds about 100 bytes). Default: the
	// folder ctxcode-ssh in $XDG_RUNTIME_DIR, else ssh in ctxcode's
	// folder of the user cache (os.UserCacheDir), made private.
	ControlDir string
	// NoSharing turns ssh's connection sharing off: every connection is
	// a new ssh session.
	NoSharing bool

	// flag is the flag that named it, for errors ("": --docker-host).
	flag string
}

// sshDefaults are the ssh options ctxcode gives unless the flags name
// them (-o takes precedence over ssh's configuration files):
//
//   - BatchMode: ssh runs without a terminal, so a password prompt could
//     only hang;
//   - ServerAliveInterval and ServerAliveCountMax: a host that stops
//     answering (a partition, a machine that died) ends its connection,
//     and every kernel attached over it, within 30 seconds, instead of
//     when TCP gives up, many minutes later; sshd itself answers these,
//     so a busy host is not taken for a lost one;
//   - ConnectTimeout: a new connection to such a host fails within 20
//     seconds instead of TCP's two minutes.
var sshDefaults = []string{"BatchMode=yes", "ServerAliveInterval=10", "ServerAliveCountMax=3", "ConnectTimeout=20"}

// SSHPersist is how long a shared ssh connection stays open once its last
// user is gone.
const SSHPersist = "10m"

// endpoint is where a Host leads: the daemon URL and, from a context,
// its TLS settings.
type endpoint struct {
	url     string // "" is the local socket (client.DefaultDockerHost)
	context string // the context it came from, if any
	tlsDir  string // a context's TLS files (ca.pem, cert.pem, key.pem), if any
	skipTLS bool
}

// String names the daemon for people: its URL, and the context it came
// from.
func (e endpoint) String() string {
	url := e.url
	if url == "" {
		url = client.DefaultDockerHost
	}
	if e.context != "" {
		return fmt.Sprintf("%s (Docker context %s)", url, e.context)
	}
	return url
}

// dockerConfigDir is the Docker CLI's configuration folder.
func dockerConfigDir() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker")
}

// resolve finds where h leads, as the Docker CLI would: an unknown context
// or a URL of another scheme is an *InputError.
func (h Host) resolve() (endpoint, error) {
	name, from := h.Name, "--docker-host"
	if h.flag != "" {
		from = h.flag
	}
	if name == "" {
		switch {
		case os.Getenv("DOCKER_CONTEXT") != "":
			name, from = os.Getenv("DOCKER_CONTEXT"), "DOCKER_CONTEXT"
		case os.Getenv(client.EnvOverrideHost) != "":
			return parseURL(os.Getenv(client.EnvOverrideHost), client.EnvOverrideHost)
		default:
			name, from = currentContext(), "the Docker CLI's current context (~/.docker/config.json)"
		}
	}
	if strings.Contains(name, "://") {
		return parseURL(name, from)
	}
	if name == "" || name == "default" {
		// The default context: DOCKER_HOST, else the local socket.
		if u := os.Getenv(client.EnvOverrideHost); u != "" {
			return parseURL(u, client.EnvOverrideHost)
		}
		return endpoint{}, nil
	}
	return lookupContext(name, from)
}

// parseURL is the daemon URL u, from where it was found, when its scheme
// is one the Docker CLI takes.
func parseURL(u, from string) (endpoint, error) {
	scheme, _, _ := strings.Cut(u, "://")
	if !strings.Contains(u, "://") || !slices.Contains([]string{"unix", "tcp", "ssh", "npipe"}, scheme) {
		return endpoint{}, inputErrorf("docker host %q (from %s): expected unix:///path, tcp://host:port, ssh://[user@]host[:port][/socket] or a Docker context name", u, from)
	}
	return endpoint{url: u}, nil
}

// currentContext is the Docker CLI's current context, or "".
func currentContext() string {
	b, err := os.ReadFile(filepath.Join(dockerConfigDir(), "config.json"))
	if err != nil {
		return ""
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return ""
	}
	return cfg.CurrentContext
}

// contextMeta is what a Docker context's meta.json says of its daemon.
type contextMeta struct {
	Name      string `json:"Name"`
	Endpoints struct {
		Docker struct {
			Host          string `json:"Host"`
			SkipTLSVerify bool   `json:"SkipTLSVerify"`
		} `json:"docker"`
	} `json:"Endpoints"`
}

// lookupContext reads the context store, as docker context does:
// contexts/meta/<sha256 of the name>/meta.json, and TLS files under
// contexts/tls/<the same>/docker.
func lookupContext(name, from string) (endpoint, error) {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	dir := filepath.Join(dockerConfigDir(), "contexts")
	b, err := os.ReadFile(filepath.Join(dir, "meta", id, "meta.json"))
	if errors.Is(err, fs.ErrNotExist) {
		known := append([]string{"default"}, knownContexts(dir)...)
		return endpoint{}, inputErrorf("Docker context %q (from %s) not found: expected a daemon URL (unix://, tcp://, ssh://) or one of the contexts %s; make one with docker context create, or see docker context ls",
			name, from, strings.Join(known, ", "))
	}
	if err != nil {
		return endpoint{}, fmt.Errorf("read Docker context %q: %w", name, err)
	}
	var m contextMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return endpoint{}, fmt.Errorf("read Docker context %q: %w", name, err)
	}
	e := endpoint{url: m.Endpoints.Docker.Host, context: name, skipTLS: m.Endpoints.Docker.SkipTLSVerify}
	if e.url == "" {
		return endpoint{}, inputErrorf("Docker context %q (from %s) names no Docker endpoint; see docker context inspect %s", name, from, name)
	}
	tls := filepath.Join(dir, "tls", id, "docker")
	if st, err := os.Stat(tls); err == nil && st.IsDir() {
		e.tlsDir = tls
	}
	return e, nil
}

// knownContexts are the names of the contexts in the store dir, sorted.
func knownContexts(dir string) []string {
	ents, _ := os.ReadDir(filepath.Join(dir, "meta"))
	var names []string
	for _, ent := range ents {
		b, err := os.ReadFile(filepath.Join(dir, "meta", ent.Name(), "meta.json"))
		if err != nil {
			continue
		}
		var m contextMeta
		if json.Unmarshal(b, &m) == nil && m.Name != "" {
			names = append(names, m.Name)
		}
	}
	slices.Sort(names)
	return names
}

// sshFlags are the flags ctxcode gives ssh: h's own (or
// $CTXCODE_SSH_FLAGS), then connection sharing unless h says not to.
func (h Host) sshFlags() ([]string, error) {
	flags := slices.Clone(h.SSHFlags)
	if flags == nil {
		flags = strings.Fields(os.Getenv("CTXCODE_SSH_FLAGS"))
	}
	given := strings.ToLower(strings.Join(flags, " "))
	for _, o := range sshDefaults {
		if name, _, _ := strings.Cut(o, "="); !strings.Contains(given, strings.ToLower(name)) {
			flags = append(flags, "-o", o)
		}
	}
	if h.NoSharing {
		return flags, nil
	}
	dir := h.ControlDir
	if dir == "" {
		var err error
		if dir, err = defaultControlDir(); err != nil {
			return nil, fmt.Errorf("ssh connection sharing: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ssh connection sharing: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ssh connection sharing: %w", err)
	}
	return append(flags,
		"-o", "ControlMaster=auto",
		"-o", "ControlPath="+filepath.Join(dir, "%C"),
		"-o", "ControlPersist="+SSHPersist), nil
}

// defaultControlDir is Host.ControlDir's default.
func defaultControlDir() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "ctxcode-ssh"), nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "ctxcode", "ssh"), nil
}

// clientOpts are the Docker client's options for e.
func (h Host) clientOpts(e endpoint) ([]client.Opt, error) {
	opts := []client.Opt{client.WithAPIVersionNegotiation()}
	switch {
	case e.url == "":
		return append(opts, client.FromEnv), nil
	case strings.HasPrefix(e.url, "ssh://"):
		flags, err := h.sshFlags()
		if err != nil {
			return nil, err
		}
		helper, err := connhelper.GetConnectionHelperWithSSHOpts(e.url, flags)
		if err != nil {
			return nil, inputErrorf("docker host %s: %w", e.url, err)
		}
		return append(opts,
			client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: helper.Dialer}}),
			client.WithHost(helper.Host),
			client.WithDialContext(helper.Dialer),
			client.WithVersionFromEnv()), nil
	case e.context != "" && (e.tlsDir != "" || e.skipTLS):
		tlsOpts := tlsconfig.Options{InsecureSkipVerify: e.skipTLS, ExclusiveRootPools: true}
		for _, f := range []struct {
			dst  *string
			name string
		}{{&tlsOpts.CAFile, "ca.pem"}, {&tlsOpts.CertFile, "cert.pem"}, {&tlsOpts.KeyFile, "key.pem"}} {
			if p := filepath.Join(e.tlsDir, f.name); e.tlsDir != "" && fileExists(p) {
				*f.dst = p
			}
		}
		cfg, err := tlsconfig.Client(tlsOpts)
		if err != nil {
			return nil, fmt.Errorf("TLS files of Docker context %s: %w", e.context, err)
		}
		return append(opts,
			client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}),
			client.WithHost(e.url),
			client.WithVersionFromEnv()), nil
	case e.context != "":
		return append(opts, client.WithHost(e.url), client.WithVersionFromEnv()), nil
	}
	// A URL named by the caller: TLS, if any, from the environment as the
	// Docker CLI takes it.
	return append(opts, client.FromEnv, client.WithHost(e.url)), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Check refuses a Host that cannot work whatever the daemon's state (an
// *InputError): a Docker context that is not there. It connects to nothing.
func (h Host) Check() error {
	_, err := h.resolve()
	return err
}

// Describe names the daemon h leads to for people: its URL, and the
// Docker context it came from.
func (h Host) Describe() string {
	e, err := h.resolve()
	if err != nil {
		return h.Name
	}
	return e.String()
}
