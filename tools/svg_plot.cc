#include "tools/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "feedline/error.h"

namespace feedline::cli {
namespace {

// Colour-blind safe palette (Okabe-Ito).
constexpr const char* kColors[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                   "#56B4E9", "#D55E00", "#F0E442", "#000000"};
constexpr int kNumColors = sizeof(kColors) / sizeof(kColors[0]);

// Plot area margins in pixels: room for tick labels, axis titles and legend.
constexpr double kLeft = 70, kRight = 130, kTop = 40, kBottom = 55;

std::string Number(double value) {
  char buffer[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.3g", value);
  }
  return buffer;
}

std::string Coord(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  return buffer;
}

}  // namespace

double NiceTickStep(double max, int target) {
  if (!(max > 0) || target < 1) return 1;
  const double raw = max / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * magnitude >= raw) return factor * magnitude;
  }
  return 10 * magnitude;
}

std::string EscapeXml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderSvg(const LinePlot& plot) {
  double max_x = 0, max_y = 0;
  for (const PlotSeries& s : plot.series) {
    if (s.x.size() != s.y.size()) {
      throw Error("plot series '" + s.label + "' has " + std::to_string(s.x.size()) +
                  " x values but " + std::to_string(s.y.size()) + " y values");
    }
    for (double v : s.x) max_x = std::max(max_x, v);
    for (double v : s.y) max_y = std::max(max_y, v);
  }
  const double x_step =
      plot.integer_x ? std::max(1.0, NiceTickStep(max_x, 8)) : NiceTickStep(max_x, 8);
  const double y_step = NiceTickStep(max_y, 5);
  const double x_end = std::max(x_step, std::ceil(max_x / x_step) * x_step);
  const double y_end = std::max(y_step, std::ceil(max_y * 1.05 / y_step) * y_step);

  const double w = plot.width, h = plot.height;
  const double plot_w = w - kLeft - kRight, plot_h = h - kTop - kBottom;
  auto px = [&](double x) { return kLeft + x / x_end * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - y / y_end * plot_h; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << plot.width << "\" height=\""
      << plot.height << "\" viewBox=\"0 0 " << plot.width << ' ' << plot.height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << Coord(w / 2) << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
      << EscapeXml(plot.title) << "</text>\n";

  // Grid lines and tick labels.
  for (double x = 0; x <= x_end + x_step / 2; x += x_step) {
    svg << "<line x1=\"" << Coord(px(x)) << "\" y1=\"" << Coord(kTop) << "\" x2=\"" << Coord(px(x))
        << "\" y2=\"" << Coord(kTop + plot_h) << "\" stroke=\"#e5e5e5\"/>\n";
    svg << "<text x=\"" << Coord(px(x)) << "\" y=\"" << Coord(kTop + plot_h + 16)
        << "\" text-anchor=\"middle\">" << Number(x) << "</text>\n";
  }
  for (double y = 0; y <= y_end + y_step / 2; y += y_step) {
    svg << "<line x1=\"" << Coord(kLeft) << "\" y1=\"" << Coord(py(y)) << "\" x2=\""
        << Coord(kLeft + plot_w) << "\" y2=\"" << Coord(py(y)) << "\" stroke=\"#e5e5e5\"/>\n";
    svg << "<text x=\"" << Coord(kLeft - 6) << "\" y=\"" << Coord(py(y) + 4)
        << "\" text-anchor=\"end\">" << Number(y) << "</text>\n";
  }
  // Axes and their titles.
  svg << "<line x1=\"" << Coord(kLeft) << "\" y1=\"" << Coord(kTop + plot_h) << "\" x2=\""
      << Coord(kLeft + plot_w) << "\" y2=\"" << Coord(kTop + plot_h) << "\" stroke=\"black\"/>\n";
  svg << "<line x1=\"" << Coord(kLeft) << "\" y1=\"" << Coord(kTop) << "\" x2=\"" << Coord(kLeft)
      << "\" y2=\"" << Coord(kTop + plot_h) << "\" stroke=\"black\"/>\n";
  svg << "<text x=\"" << Coord(kLeft + plot_w / 2) << "\" y=\"" << Coord(h - 12)
      << "\" text-anchor=\"middle\">" << EscapeXml(plot.x_label) << "</text>\n";
  svg << "<text transform=\"translate(16 " << Coord(kTop + plot_h / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << EscapeXml(plot.y_label) << "</text>\n";

  // One polyline with dots per series, and its legend entry.
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const char* color = kColors[i % kNumColors];
    svg << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (size_t j = 0; j < s.x.size(); ++j) {
      svg << (j ? " " : "") << Coord(px(s.x[j])) << ',' << Coord(py(s.y[j]));
    }
    svg << "\"/>\n";
    for (size_t j = 0; j < s.x.size(); ++j) {
      svg << "<circle cx=\"" << Coord(px(s.x[j])) << "\" cy=\"" << Coord(py(s.y[j]))
          << "\" r=\"3\" fill=\"" << color << "\"/>\n";
    }
    const double ly = kTop + 10 + 18.0 * static_cast<double>(i);
    svg << "<line x1=\"" << Coord(w - kRight + 15) << "\" y1=\"" << Coord(ly) << "\" x2=\""
        << Coord(w - kRight + 35) << "\" y2=\"" << Coord(ly) << "\" stroke=\"" << color
        << "\" stroke-width=\"2\"/>\n";
    svg << "<text x=\"" << Coord(w - kRight + 40) << "\" y=\"" << Coord(ly + 4) << "\">"
        << EscapeXml(s.label) << "</text>\n";
  }

  if (plot.marker) {
    const PlotMarker& m = *plot.marker;
    svg << "<circle cx=\"" << Coord(px(m.x)) << "\" cy=\"" << Coord(py(m.y))
        << "\" r=\"7\" fill=\"none\" stroke=\"#D55E00\" stroke-width=\"2\"/>\n";
    // The label goes on the side of the point with more room.
    const bool left = px(m.x) > kLeft + plot_w / 2;
    svg << "<text x=\"" << Coord(px(m.x) + (left ? -10 : 10)) << "\" y=\"" << Coord(py(m.y) - 10)
        << "\" text-anchor=\"" << (left ? "end" : "start") << "\" fill=\"#D55E00\">"
        << EscapeXml(m.label) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace feedline::cli
