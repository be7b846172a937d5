import { parsePhoneNumberFromString } from 'libphonenumber-js/min'
import metadata from 'libphonenumber-js/min/metadata'

/**
 * A recipient's possible time zones, from their phone number: its country (libphonenumber's
 * metadata, the country a calling code's numbers mostly belong to when the number itself does not
 * say), then that country's zones (ICU's copy of the IANA time-zone database, through `Intl`).
 * A country with several zones answers all of them: see `QuietHoursClock` for the rule.
 */
export class RecipientZones {
  /** Zones by the number's first digits: the country never depends on more than these. */
  readonly #byPrefix = new Map<string, readonly string[] | null>()
  readonly #byCountry = new Map<string, readonly string[]>()

  /** The phone's zones; undefined when its country is not known (or has no zone in the data). */
  ofPhone(phone: string): readonly string[] | undefined {
    // The calling code and the next digits decide the country (an area code in +1, a mobile
    // range in +7 or +44); the rest of the number never moves it to another zone list.
    const prefix = phone.slice(0, PREFIX_LENGTH)
    const known = this.#byPrefix.get(prefix)
    if (known !== undefined) return known ?? undefined
    const parsed = parsePhoneNumberFromString(phone)
    if (!parsed) return undefined
    const zones = this.ofCountry(parsed.country ?? mainCountry(parsed.countryCallingCode) ?? '') ?? null
    // Only a number libphonenumber places in a country speaks for its prefix: an invalid one got
    // its calling code's main country, which its valid neighbours may not share (+7 7…: Kazakhstan).
    if (parsed.country) {
      if (this.#byPrefix.size >= MAX_PREFIXES) this.#byPrefix.clear()
      this.#byPrefix.set(prefix, zones)
    }
    return zones ?? undefined
  }

  /** A country's zones (ISO 3166 code), or undefined when the data has none. */
  ofCountry(country: string): readonly string[] | undefined {
    if (country === '') return undefined
    let zones = this.#byCountry.get(country)
    if (!zones) {
      zones = countryZones(country)
      this.#byCountry.set(country, zones)
    }
    return zones.length > 0 ? zones : undefined
  }
}

const PREFIX_LENGTH = 8
const MAX_PREFIXES = 100_000

/** The first country libphonenumber lists for a calling code: the one its numbers mostly belong to. */
function mainCountry(callingCode: string): string | undefined {
  return (metadata as { country_calling_codes: Record<string, string[]> }).country_calling_codes[
    callingCode
  ]?.[0]
}

function countryZones(country: string): string[] {
  try {
    const locale = new Intl.Locale(`und-${country}`) as Intl.Locale & {
      getTimeZones?(): string[] | undefined
      timeZones?: string[]
    }
    return locale.getTimeZones?.() ?? locale.timeZones ?? []
  } catch {
    return []
  }
}
