// html_page.h — the HTML toolkit every page of reports/ is built with (the profile, the
// comparison and the merge pages): the page shell with the CSS and JS of reports/assets
// embedded, escaping, KPI tiles and SVG polylines. Internal to the reports library.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gnnprof/reports/report.h"

namespace gnnprof::reports::html {

/// &, <, >, ", ' escaped.
std::string esc(const std::string& s);
/// <!doctype html> ... <body>: the page's title and report.css, inline (one offline file).
std::string page_head(const std::string& title);
/// report.js, inline, and the end of the page.
std::string page_end();
/// A KPI tile: a big value over a small label.
std::string kpi(const std::string& value, const std::string& label);
/// An SVG polyline through `points` (x, y in px) with a hover title; dashed or solid.
std::string polyline(const std::vector<std::pair<double, double>>& points, const std::string& color, const std::string& title,
                     bool dashed = false);

/// The profile page's sections below its header (phases, icicle, lines, copies, ...); the
/// comparison shows two of them side by side (`compact`).
std::string profile_body(const Report& r, bool compact);

}  // namespace gnnprof::reports::html
