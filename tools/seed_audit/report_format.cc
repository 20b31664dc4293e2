#include "tools/seed_audit/report_format.h"

#include <sstream>

namespace seedloader::audit {
namespace {

nlohmann::ordered_json place_json(const SamplePlace& p) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (p.run) j["run"] = *p.run;
  if (p.rank) j["rank"] = *p.rank;
  if (p.source) j["source"] = *p.source;
  if (p.epoch) j[p.source ? "source_epoch" : "epoch"] = *p.epoch;
  if (p.worker) j["worker"] = *p.worker;
  if (p.batch) j["batch"] = *p.batch;
  if (p.index) j["index"] = *p.index;
  return j;
}

std::string place_text(const SamplePlace& p) {
  std::ostringstream s;
  const char* sep = "";
  auto field = [&](const char* name, auto value) {
    if (!value) return;
    s << sep << name << " " << *value;
    sep = " ";
  };
  field("run", p.run);
  field("rank", p.rank);
  field("source", p.source);
  field(p.source ? "source_epoch" : "epoch", p.epoch);
  field("worker", p.worker);
  field("batch", p.batch);
  field("index", p.index);
  return s.str();
}

nlohmann::ordered_json findings_json(const std::vector<Finding>& findings) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Finding& f : findings) {
    nlohmann::ordered_json examples = nlohmann::ordered_json::array();
    for (const Example& e : f.examples) {
      nlohmann::ordered_json x = place_json(e.sample);
      if (e.other) x["same_as"] = place_json(*e.other);
      if (!e.note.empty()) x["note"] = e.note;
      if (!e.aug.empty()) x["aug"] = e.aug;
      examples.push_back(std::move(x));
    }
    nlohmann::ordered_json finding;
    finding["kind"] = finding_name(f.kind);
    finding["count"] = f.count;
    finding["examples"] = std::move(examples);
    finding["hint"] = finding_hint(f.kind);
    out.push_back(std::move(finding));
  }
  return out;
}

void findings_text(const std::vector<Finding>& findings, const char* label,
                   std::ostringstream& s) {
  for (const Finding& f : findings) {
    const char* unit = f.kind == FindingKind::kEpochOrderRepeat ? " epoch" : " sample";
    s << "\n"
      << finding_name(f.kind) << ": " << f.count << unit << (f.count == 1 ? "" : "s")
      << "\n";
    for (const Example& e : f.examples) {
      s << "  " << place_text(e.sample);
      if (!e.note.empty()) s << ": " << e.note;
      if (e.other) s << " " << place_text(*e.other);
      if (!e.aug.empty()) s << " (aug " << e.aug << ")";
      s << "\n";
    }
    s << "  " << label << finding_hint(f.kind) << "\n";
  }
}

}  // namespace

nlohmann::ordered_json report_json(const Report& report) {
  nlohmann::ordered_json j;
  j["verdict"] = report.clean() ? "clean" : "findings";
  j["samples"] = report.samples;
  j["findings"] = findings_json(report.findings);
  j["information"] = findings_json(report.information);
  return j;
}

std::string report_text(const Report& report) {
  std::ostringstream s;
  if (report.clean()) {
    s << "clean: " << report.samples
      << " samples, no duplicate random states, rank overlaps or repeated orders\n";
  } else {
    s << report.findings.size()
      << (report.findings.size() == 1 ? " finding" : " findings") << " in "
      << report.samples << " samples\n";
    findings_text(report.findings, "likely cause and fix: ", s);
  }
  findings_text(report.information, "information, not a finding: ", s);
  return s.str();
}

}  // namespace seedloader::audit
