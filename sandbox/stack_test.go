package sandbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// TestImageHasAnalystStack: the kernel image imports every library of a
// data analyst's stack (DESIGN.md, "The kernel image") in the hardened
// container (read-only root, no network, user nobody), uses them, and
// matplotlib draws to a file with no warning on stderr.
func TestImageHasAnalystStack(t *testing.T) {
	k := startKernel(t, testConfig(t))
	var versions map[string]string
	answer(t, k, `import importlib
mods = ["numpy", "pandas", "scipy", "sklearn", "statsmodels", "matplotlib", "IPython"]
ANSWER({m: importlib.import_module(m).__version__ for m in mods})`, &versions)
	for _, m := range []string{"numpy", "pandas", "scipy", "sklearn", "statsmodels", "matplotlib", "IPython"} {
		assert.NotEmpty(t, versions[m], "no version of %s", m)
	}

	// Each used as the questions of a data-analysis suite name them.
	var got struct {
		ShapiroP float64 `json:"shapiro_p"`
		Slope    float64 `json:"slope"`
		OLS      float64 `json:"ols"`
		Train    int     `json:"train"`
		PNG      bool    `json:"png"`
	}
	answer(t, k, `import numpy as np, pandas as pd
from scipy import stats
import statsmodels.api as sm
from sklearn.model_selection import train_test_split
from sklearn.linear_model import LinearRegression
import matplotlib.pyplot as plt
x = np.arange(1, 41, dtype=float)
y = 3 * x + 2
df = pd.DataFrame({"x": x, "y": y})
train, test = train_test_split(df, test_size=0.25, random_state=0)
fit = LinearRegression().fit(train[["x"]], train["y"])
ols = sm.OLS(df["y"], sm.add_constant(df["x"])).fit()
plt.plot(df["x"], df["y"])
plt.savefig("/tmp/plot.png")
import os
ANSWER({"shapiro_p": float(stats.shapiro(x).pvalue), "slope": float(fit.coef_[0]),
        "ols": float(ols.params["x"]), "train": len(train), "png": os.path.getsize("/tmp/plot.png") > 0})`, &got)
	assert.InDelta(t, 3.0, got.Slope, 1e-9)
	assert.InDelta(t, 3.0, got.OLS, 1e-9)
	assert.Equal(t, 30, got.Train)
	assert.Greater(t, got.ShapiroP, 0.0)
	assert.True(t, got.PNG, "matplotlib wrote no file")

	// A fresh import writes nothing to stderr: no font-cache or
	// config-folder warning lands in a prefix's output.
	restart(t, k)
	res := execCell(t, k, "import matplotlib.pyplot as plt, scipy.stats, sklearn, statsmodels.api", 2*time.Minute)
	require.Equal(t, kernel.StatusOK, res.Status, "error: %+v", res.Error)
	assert.Empty(t, res.Stderr)
	assert.Empty(t, res.Stdout)
}
