# Checks that every public name in include/edgeprof has a doc comment (ctest cpp-header-docs,
# tests/CMakeLists.txt): doxygen with warnings as errors, and undocumented enumerators found in
# its XML. Run as cmake -DDOXYGEN=... -DSOURCE_DIR=... -DOUTPUT_DIR=... -P check-header-docs.cmake
cmake_minimum_required(VERSION 3.20)
if(NOT DOXYGEN)
  find_program(DOXYGEN_AT_TEST_TIME doxygen)
  set(DOXYGEN "${DOXYGEN_AT_TEST_TIME}")
endif()
if(NOT DOXYGEN)
  message(FATAL_ERROR "doxygen is not installed, so the doc comments of the public headers "
                      "cannot be checked: install it (Debian: apt-get install doxygen) and run "
                      "the test again")
endif()

# docs/Doxyfile as it is, with the output in the build directory and XML for the enumerators.
file(REMOVE_RECURSE "${OUTPUT_DIR}")
file(MAKE_DIRECTORY "${OUTPUT_DIR}")
file(READ "${SOURCE_DIR}/docs/Doxyfile" config)
string(APPEND config "\nOUTPUT_DIRECTORY = \"${OUTPUT_DIR}\"\nGENERATE_XML = YES\n"
                     "WARN_AS_ERROR = FAIL_ON_WARNINGS\n")
file(WRITE "${OUTPUT_DIR}/Doxyfile" "${config}")
execute_process(COMMAND "${DOXYGEN}" "${OUTPUT_DIR}/Doxyfile" WORKING_DIRECTORY "${SOURCE_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
  message(FATAL_ERROR "doxygen (${DOXYGEN}) failed with exit code ${rc}: every public name in "
                      "include/edgeprof needs a doc comment (///, or ///< after a member), and "
                      "the comments must be valid doxygen:\n${err}${out}")
endif()

# Enumerators whose brief and detailed descriptions are both empty.
string(ASCII 1 end_of_enum)
string(ASCII 2 end_of_value)
set(space "[ \t\r\n]*")
string(CONCAT undocumented "<briefdescription>${space}</briefdescription>${space}"
                           "<detaileddescription>${space}</detaileddescription>")
set(missing "")
file(GLOB xml_files "${OUTPUT_DIR}/xml/*.xml")
foreach(xml_file IN LISTS xml_files)
  file(READ "${xml_file}" xml)
  # Semicolons and brackets would split or join CMake list items.
  string(REGEX REPLACE "[][;]" "_" xml "${xml}")
  string(REPLACE "</memberdef>" "${end_of_enum}" xml "${xml}")
  string(REGEX MATCHALL "<memberdef kind=\"enum\"[^${end_of_enum}]*" enums "${xml}")
  foreach(enum IN LISTS enums)
    string(REGEX MATCH "<qualifiedname>([^<]*)</qualifiedname>" unused "${enum}")
    set(enum_name "${CMAKE_MATCH_1}")
    string(REGEX MATCH "<location file=\"([^\"]*)\" line=\"([0-9]*)\"" unused "${enum}")
    set(where "${CMAKE_MATCH_1}:${CMAKE_MATCH_2}")
    string(REPLACE "</enumvalue>" "${end_of_value}" enum "${enum}")
    string(REGEX MATCHALL "<enumvalue [^${end_of_value}]*" values "${enum}")
    foreach(value IN LISTS values)
      if(value MATCHES "${undocumented}")
        string(REGEX MATCH "<name>([^<]*)</name>" unused "${value}")
        list(APPEND missing "${where}: enumerator ${enum_name}::${CMAKE_MATCH_1} is not documented")
      endif()
    endforeach()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES missing)
if(missing)
  list(JOIN missing "\n" missing)
  message(FATAL_ERROR "every enumerator needs a doc comment (///< after it):\n${missing}")
endif()
message(STATUS "every public name in include/edgeprof is documented; API reference in "
               "${OUTPUT_DIR}/html")
