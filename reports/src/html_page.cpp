#include "html_page.h"

#include <fmt/format.h>

#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

namespace assets {  // reports/assets/, compiled in by cmake/EmbedAssets.cmake
extern const char* const k_asset_report_css;
extern const char* const k_asset_report_js;
}  // namespace assets

namespace html {

std::string esc(const std::string& s) { return escape_markup(s); }

std::string page_head(const std::string& title) {
  return "<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width,initial-scale=1'>"
         "<title>" + esc(title) + "</title><style>" + assets::k_asset_report_css + "</style></head><body>";
}

std::string page_end() { return std::string("<script>") + assets::k_asset_report_js + "</script></body></html>\n"; }

std::string kpi(const std::string& value, const std::string& label) {
  return fmt::format("<div class=kpi><b>{}</b><span>{}</span></div>", esc(value), esc(label));
}

std::string polyline(const std::vector<std::pair<double, double>>& points, const std::string& color, const std::string& title,
                     bool dashed) {
  std::string pts;
  for (const auto& [x, y] : points) pts += fmt::format("{:.1f},{:.1f} ", x, y);
  return fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"{} points=\"{}\"><title>{}</title></polyline>\n", color,
                     dashed ? " stroke-dasharray=\"4 3\"" : "", pts, esc(title));
}

}  // namespace html
}  // namespace gnnprof::reports
