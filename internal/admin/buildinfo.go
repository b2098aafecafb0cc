package admin

import (
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Build describes the running binary, from the module and VCS
// information the Go toolchain stamps into it (go build in a git
// checkout; -buildvcs=false or a build outside one leaves Revision
// "unknown").
type Build struct {
	Version   string `json:"version"`  // module version: a tag, a pseudo-version, or "(devel)"
	Revision  string `json:"revision"` // VCS commit
	Modified  bool   `json:"modified"` // built from a work tree with uncommitted changes
	Time      string `json:"time"`     // commit time, RFC 3339; "" if unknown
	GoVersion string `json:"go_version"`
}

// stampedVersion and stampedRevision, set with the linker
// (-X github.com/b3-storage/b3/internal/admin.stampedVersion=v1.2.3), win
// over the toolchain's stamp: a container build has no .git to read.
var stampedVersion, stampedRevision string

// BuildInfo reads the binary's build information.
func BuildInfo() (b Build) {
	b = Build{Version: "(devel)", Revision: "unknown"}
	defer func() {
		if stampedVersion != "" {
			b.Version = stampedVersion
		}
		if stampedRevision != "" {
			b.Revision = stampedRevision
		}
	}()
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = info.GoVersion
	if v := info.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.Time = s.Value
		}
	}
	return b
}

// RegisterBuildInfo adds b3_build_info{version,revision,goversion} = 1.
func RegisterBuildInfo(r prometheus.Registerer) {
	b := BuildInfo()
	revision := b.Revision
	if b.Modified {
		revision += "-modified"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "b3_build_info",
		Help:        "Always 1; the labels say which build runs: module version, VCS revision (-modified: uncommitted changes), Go version.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	r.MustRegister(g)
}
