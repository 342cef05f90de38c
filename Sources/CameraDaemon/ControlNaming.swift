/// v4l2-ctl's name for a control: the display name lower-cased, every run of
/// other characters turned into one "_", none at either end.
/// "White Balance, Automatic" → "white_balance_automatic".
func controlName(fromDisplayName displayName: String) -> String {
    var name = ""
    var pendingSeparator = false
    for scalar in displayName.unicodeScalars {
        if scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
            if pendingSeparator && !name.isEmpty { name.append("_") }
            pendingSeparator = false
            name.unicodeScalars.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars)
        } else {
            pendingSeparator = true
        }
    }
    return name
}
