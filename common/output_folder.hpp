// A run's output folder written as one transaction (docs/design.md §10: nothing half-written):
// files go to a hidden staging folder beside the destination and move in only once all are written,
// so a failure (bad input found late, a full disk, a kill) leaves the destination as it was.
#pragma once
#include <string>

namespace attngeo {

// Checks before any work that `destination` can become an output folder: it is not an existing
// file, its name is not too long for the file system, and its parent exists or can be made.
// InputError naming `flag` and the path otherwise.
void check_output_folder(const std::string& destination, const std::string& flag);

class OutputFolder {
  public:
    // Checks `destination` (check_output_folder) and creates the staging folder
    // `<parent>/.<name>.staging-<pid>`.
    OutputFolder(const std::string& destination, const std::string& flag);
    OutputFolder(const OutputFolder&) = delete;
    OutputFolder& operator=(const OutputFolder&) = delete;
    // Removes the staging folder unless committed.
    ~OutputFolder();

    // Where the files are written until commit (may hold subfolders).
    const std::string& staging() const { return staging_; }
    const std::string& destination() const { return destination_; }
    // Writes one file of the folder (atomically, into the staging folder); a failure names the
    // file at its destination.
    void write(const std::string& name, const std::string& content);
    // Moves every staged file into the destination (created when missing; files already there
    // with the same names are replaced, others are kept), then removes the staging folder.
    void commit();

  private:
    std::string destination_, flag_, staging_;
    bool committed_ = false;
};

}  // namespace attngeo
