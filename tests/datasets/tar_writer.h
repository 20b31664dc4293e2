// Test helper: writes tar files member by member with libarchive (pax format, so
// long names get extended headers), including the links and hostile names the
// reader must reject.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace seedloader::testing {

struct Member {
  enum Type { kFile, kSymlink, kHardlink } type = kFile;
  std::string name;
  std::vector<std::uint8_t> data;
  std::string target;
};

// Writes a pax tar (long names get pax extended headers) or a GNU tar.
inline void write_tar(const std::string& path, const std::vector<Member>& members,
                      bool gnu = false) {
  archive* a = archive_write_new();
  if (gnu) {
    archive_write_set_format_gnutar(a);  // long names as ././@LongLink members
  } else {
    archive_write_set_format_pax_restricted(a);
  }
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  for (const Member& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_perm(e, 0644);
    if (m.type == Member::kSymlink) {
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, m.target.c_str());
    } else {
      archive_entry_set_filetype(e, AE_IFREG);
      if (m.type == Member::kHardlink) archive_entry_set_hardlink(e, m.target.c_str());
      archive_entry_set_size(e, m.type == Member::kHardlink ? 0 : m.data.size());
    }
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (m.type == Member::kFile && !m.data.empty()) {
      ASSERT_EQ(archive_write_data(a, m.data.data(), m.data.size()),
                static_cast<la_ssize_t>(m.data.size()));
    }
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

}  // namespace seedloader::testing
