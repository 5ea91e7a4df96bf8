// The sweep report as one self-contained HTML file for the people who pay for the GPUs: the
// recommended configuration and its speedup over the baseline, the ranking, curves, the effect
// of each parameter, cost and study metadata. No script, no fonts, nothing fetched: inline CSS
// and SVG, and a Content-Security-Policy that forbids any request, so it opens from an email
// offline and prints well. Every text from the study, its parameters or its logs is escaped.
// Module reports/: rendering plain data into reports; uses base/ only. A public header (the internal
// ones say "Internal to reports/").
#pragma once

#include <cstddef>
#include <string>

#include "reports/html_options.h"
#include "reports/study_report.h"

namespace sweep::reports {

// The Content-Security-Policy the report carries: nothing may be fetched, inline CSS and data:
// images only. Exposed for the browser test.
inline constexpr const char* kReportCsp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

// The report's stylesheet, shared with the comparison of studies (compare_report.h).
const char* ReportStyle();

std::string RenderHtmlReport(const StudyReport& report, const HtmlOptions& options = {});

}  // namespace sweep::reports
