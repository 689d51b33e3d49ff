// uPlot is loaded by index.html as a classic script (uplot.min.js, served from the uplot package)
// and sets this global; the dashboard imports only its types.
import type UPlot from "uplot";

declare global {
  const uPlot: typeof UPlot;
}
